"""NumPy semantics on Tracers, lowered to explicit IR ops.

This is where NumPy's implicit rules become explicit IR: type promotion (NEP 50, Python scalars
weak) becomes ``convert``, broadcasting becomes ``broadcast_in_dim``, ``keepdims`` becomes
``reshape``, and so on. Functions take Tracers, NumPy arrays or Python scalars (at least one
Tracer) and return Tracers with the dtype and shape NumPy would give.

This module holds what every op shares: getting operands into the current trace (``lift``,
constants, ``emit``) and dtype promotion. The ops live in one module per job: elementwise.py,
shapes.py, reductions.py, linalg.py (matmul, dot, tensordot, outer) and gather.py (take,
integer-array indexing). They are imported at the bottom, so ``primitives.NAME`` reaches every
op, as callers (``from . import primitives as P``) expect.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..ir import dtypes, ops
from ..ir.dtypes import DType
from ..ir import types as _types
from .errors import numpy_error, unsupported
from .trace import Trace, check_alive, current_trace
from .tracer import Tracer

# ---------------------------------------------------------------------------------------------
# Getting operands into the current trace


def _trace_of(*xs) -> Trace:
    best = None
    for x in xs:
        if isinstance(x, Tracer):
            check_alive(x)
            if best is None or x._trace.level > best.level:
                best = x._trace
    if best is None:
        best = current_trace()
        if best is None:
            raise RuntimeError("no trace is active")
    return best


def emit(trace: Trace, opdef, operands, weak=False, **attrs) -> Tracer:
    op = trace.emit(opdef, [x._value for x in operands], **attrs)
    return Tracer(op.result, trace, weak)


def constant(value, dtype: DType | None = None, trace: Trace | None = None,
             weak=False) -> Tracer:
    trace = trace or current_trace()
    try:
        arr = np.asarray(value, dtype=dtype.np if dtype else None)
    except OverflowError:
        # The error NumPy raises for x + 2**70 with an integer x, with the user's line.
        raise numpy_error(OverflowError, f"Python integer {_short(value)} out of bounds for "
                          f"{dtype.name if dtype else 'int64'}",
                          "use a float constant (e.g. 2.0**70) or keep integers within "
                          "int64") from None
    constant_dtype(arr.dtype)
    return emit(trace, ops.constant, [], weak=weak, value=arr)


def constant_dtype(dtype: np.dtype) -> DType:
    """The IR dtype of a constant's NumPy dtype: an array captured from the enclosing code or
    made in traced code. Other dtypes would only fail later, inside the IR builder."""
    try:
        return dtypes.as_dtype(dtype)
    except TypeError:
        supported = ", ".join(d.name for d in dtypes.all_dtypes())
        raise numpy_error(TypeError, f"an array or value of dtype {dtype} is used in traced "
                          f"code; tracejit supports {supported}",
                          "convert it with .astype(...) (object arrays: build them from "
                          "numbers) before the jitted function uses it") from None


def requested_dtype(dtype) -> DType:
    """A dtype the traced code asks for (astype, dtype=...), or an error at the user's line."""
    try:
        return dtypes.as_dtype(dtype)
    except TypeError as e:
        raise numpy_error(TypeError, str(e), "use one of the supported dtypes") from None


def _short(value) -> str:
    if isinstance(value, int) and builtins.abs(value) >= 10**40:
        return f"of {value.bit_length()} bits"
    return repr(value)


def lift(x, trace: Trace | None = None) -> Tracer:
    """x as a Tracer of ``trace``: captures outer tracers, makes constants of everything else."""
    trace = trace or _trace_of(x)
    if isinstance(x, Tracer):
        check_alive(x)
        if x._trace is trace:
            return x
        return Tracer(trace.capture(x), trace, x._weak)
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        kind = dtypes.weak_kind_of(x)
        return constant(x, dtypes.default_dtype_for_weak(kind), trace, weak=True)
    if isinstance(x, (np.ndarray, np.generic)):
        return constant(x, trace=trace)
    if isinstance(x, (list, tuple)):
        if _has_tracer(x):
            # [t0, t1, ...] as np.asarray would see it: stacked, promoted without weak scalars.
            d = _sequence_dtype(x)
            return stack([convert(lift(e, trace), d) for e in x]) if x else constant(
                np.zeros(0), trace=trace)
        return constant(np.asarray(x), trace=trace)
    raise unsupported(f"an operand of type {type(x).__name__}",
                      "pass NumPy arrays, Python numbers or traced values")


def _has_tracer(seq) -> bool:
    return builtins.any(isinstance(e, Tracer) or (isinstance(e, (list, tuple)) and
                                                   _has_tracer(e)) for e in seq)


def _sequence_dtype(seq) -> DType:
    def leaf_dtypes(e):
        if isinstance(e, (list, tuple)):
            return [d for c in e for d in leaf_dtypes(c)]
        return [dt(e).np if isinstance(e, Tracer) else np.asarray(e).dtype]
    return dtypes.as_dtype(np.result_type(*leaf_dtypes(seq)))


def lift_all(*xs) -> list[Tracer]:
    trace = _trace_of(*xs)
    return [lift(x, trace) for x in xs]


def dt(x: Tracer) -> DType:
    return x._value.type.dtype


# ---------------------------------------------------------------------------------------------
# Promotion and broadcasting


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """NumPy's broadcast shape; a clash is a ValueError naming the shapes and the user's line."""
    try:
        return _types.broadcast_shapes(*shapes)
    except ValueError as e:
        raise numpy_error(ValueError, f"operands could not be broadcast together: {e}",
                          "aligned from the right, each pair of dimensions must be equal or "
                          "one of them 1; add axes with x[:, None] or reshape") from None


def convert(x: Tracer, dtype: DType, weak=False) -> Tracer:
    if dt(x) == dtype:
        if x._weak and not weak:
            return Tracer(x._value, x._trace, False)
        return x
    return emit(x._trace, ops.convert, [x], weak=weak, dtype=dtype)


def abstract(x) -> tuple[DType, bool]:
    """(dtype, weak) of an operand, without emitting anything."""
    if isinstance(x, Tracer):
        return dt(x), x._weak
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return dtypes.default_dtype_for_weak(dtypes.weak_kind_of(x)), True
    if isinstance(x, (list, tuple)):
        if _has_tracer(x):
            return _sequence_dtype(x), False
        x = np.asarray(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return constant_dtype(x.dtype), False
    raise unsupported(f"an operand of type {type(x).__name__}",
                      "pass NumPy arrays, Python numbers or traced values")


def result_dtype(*xs) -> DType:
    """NumPy's result dtype for these operands (Tracers, arrays or Python scalars)."""
    return dtypes.promote(*(abstract(x) for x in xs))


def promote(*xs, dtype: DType | None = None) -> list[Tracer]:
    """Lift, promote to one dtype (NumPy's rule unless given) and broadcast to one shape."""
    trace = _trace_of(*xs)
    target = dtype or result_dtype(*xs)
    weak = builtins.all(abstract(x)[1] for x in xs)
    ts = []
    for x in xs:
        if isinstance(x, Tracer) or (isinstance(x, (list, tuple)) and _has_tracer(x)):
            ts.append(convert(lift(x, trace), target, weak))
        else:  # a constant: make it in the target dtype directly
            ts.append(constant(x, target, trace, weak))
    shape = broadcast_shapes(*(t.shape for t in ts))
    return [broadcast_to(t, shape) for t in ts]


def astype(x, dtype) -> Tracer:
    return convert(lift(x), requested_dtype(dtype))


# ---------------------------------------------------------------------------------------------
# The ops, by job. Imported last: they use the helpers above, which in turn call reshape,
# stack and broadcast_to (lift stacks a list of tracers, promote broadcasts).

from .shapes import (  # noqa: E402
    broadcast_to, concatenate, expand_dims, flip, full, iota, moveaxis, normalize_axes,
    normalize_axis, pad, reshape, slice_, squeeze, stack, swapaxes, transpose)
from .elementwise import (  # noqa: E402
    absolute, add, arccos, arcsin, arcsinh, arctan, arctan2, arctanh, bitwise_and, bitwise_or,
    bitwise_xor, ceil, clip, cos, cosh, equal, erf, exp, exp2, expm1, float_power, floor,
    floor_divide, fmax, fmin, greater, greater_equal, hypot, invert, isfinite, isinf, isnan, less,
    less_equal, log, log10, log1p, log2, logaddexp, logical_and, logical_not, logical_or,
    logical_xor, maximum, minimum, multiply, negative, not_equal, power, reciprocal, remainder,
    rint, sigmoid, sign, sin, sinh, sqrt, square, subtract, tan, tanh, to_bool, true_divide, trunc,
    where)
from .reductions import (  # noqa: E402
    all, amax, amin, any, argmax, argmin, mean, prod, std, sum, var)
from .linalg import (  # noqa: E402
    dot, matmul, outer, tensordot)
from .gather import (  # noqa: E402
    check_bounds, constant_value, gather_linear, take, take_along_axis, wrap_index)

__all__ = ["emit", "constant", "constant_dtype", "requested_dtype", "lift", "lift_all", "dt",
           "broadcast_shapes", "convert", "abstract", "result_dtype", "promote", "astype",
           "normalize_axis", "normalize_axes", "reshape", "broadcast_to", "transpose", "swapaxes",
           "moveaxis", "squeeze", "expand_dims", "concatenate", "stack", "flip", "slice_", "pad",
           "iota", "full", "add", "subtract", "multiply", "true_divide", "floor_divide",
           "remainder", "power", "maximum", "minimum", "arctan2", "fmax", "fmin", "logaddexp",
           "hypot", "float_power", "equal", "not_equal", "less", "less_equal", "greater",
           "greater_equal", "to_bool", "logical_and", "logical_or", "logical_xor", "bitwise_and",
           "bitwise_or", "bitwise_xor", "exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan",
           "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arctanh", "rint",
           "erf", "sigmoid", "log2", "log10", "exp2", "floor", "ceil", "trunc", "negative",
           "absolute", "sign", "square", "reciprocal", "logical_not", "invert", "isnan", "isinf",
           "isfinite", "where", "clip", "sum", "prod", "mean", "var", "std", "amax", "amin", "all",
           "any", "argmax", "argmin", "matmul", "dot", "tensordot", "outer", "take",
           "constant_value", "check_bounds", "wrap_index", "gather_linear", "take_along_axis"]
