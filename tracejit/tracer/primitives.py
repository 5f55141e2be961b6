"""NumPy semantics on Tracers, lowered to explicit IR ops.

This is where NumPy's implicit rules become explicit IR: type promotion (NEP 50, Python scalars
weak) becomes ``convert``, broadcasting becomes ``broadcast_in_dim``, ``keepdims`` becomes
``reshape``, and so on. Functions take Tracers, NumPy arrays or Python scalars (at least one
Tracer) and return Tracers with the dtype and shape NumPy would give.
"""
from __future__ import annotations

import builtins
import math

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


def broadcast_to(x, shape) -> Tracer:
    x = lift(x)
    shape = tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    if len(shape) < x.ndim or builtins.any(
            n != 1 and n != m for n, m in zip(x.shape[::-1], shape[::-1])):
        raise numpy_error(ValueError, f"cannot broadcast an array of shape {x.shape} to the "
                          f"shape {shape}", "each dimension must be 1 or equal to the target's")
    # Drop the size-1 dims that grow, so the IR says exactly which dims are new.
    lead = len(shape) - x.ndim
    keep = [i for i, n in enumerate(x.shape) if n == shape[lead + i]]
    if len(keep) != x.ndim:
        x = reshape(x, [x.shape[i] for i in keep])
    return emit(x._trace, ops.broadcast_in_dim, [x], weak=x._weak, shape=shape,
                dims=tuple(lead + i for i in keep))


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


# ---------------------------------------------------------------------------------------------
# Elementwise arithmetic


def _binary(opdef, a, b, dtype=None, out_bool=False):
    a, b = promote(a, b, dtype=dtype)
    return emit(a._trace, opdef, [a, b], weak=(a._weak and b._weak and not out_bool))


def _float_result(*xs) -> DType:
    d = result_dtype(*xs)
    return d if d.is_float else dtypes.float64


def add(a, b):
    if result_dtype(a, b).is_bool:
        return _binary(ops.logical_or, a, b)
    return _binary(ops.add, a, b)


def subtract(a, b):
    if result_dtype(a, b).is_bool:
        raise numpy_error(TypeError, "numpy boolean subtract, the `-` operator, is not "
                          "supported", "use np.logical_xor or ^ instead")
    return _binary(ops.sub, a, b)


def multiply(a, b):
    if result_dtype(a, b).is_bool:
        return _binary(ops.logical_and, a, b)
    return _binary(ops.mul, a, b)


def true_divide(a, b):
    return _binary(ops.div, a, b, dtype=_float_result(a, b))


def _numeric(name, a, b):
    d = result_dtype(a, b)
    if d.is_bool:
        raise unsupported(f"{name} on bool arrays", "convert to an integer dtype first")
    return d


def floor_divide(a, b):
    return _binary(ops.floor_divide, a, b, dtype=_numeric("floor_divide", a, b))


def remainder(a, b):
    return _binary(ops.remainder, a, b, dtype=_numeric("remainder", a, b))


def power(a, b):
    if isinstance(b, (int, float)) and not isinstance(b, bool) and isinstance(a, Tracer):
        if b == 2:
            return multiply(a, a)
        if b == 1:
            return a
    return _binary(ops.power, a, b, dtype=_numeric("power", a, b))


def maximum(a, b):
    return _binary(ops.maximum, a, b, dtype=_numeric("maximum", a, b))


def minimum(a, b):
    return _binary(ops.minimum, a, b, dtype=_numeric("minimum", a, b))


def arctan2(a, b):
    return _binary(ops.arctan2, a, b, dtype=_float_result(a, b))


def fmax(a, b):
    """maximum that ignores NaN: the other operand wins."""
    a, b = promote(a, b, dtype=_numeric("fmax", a, b))
    if not dt(a).is_float:
        return maximum(a, b)
    return where(isnan(b), a, where(isnan(a), b, maximum(a, b)))


def fmin(a, b):
    a, b = promote(a, b, dtype=_numeric("fmin", a, b))
    if not dt(a).is_float:
        return minimum(a, b)
    return where(isnan(b), a, where(isnan(a), b, minimum(a, b)))


def logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow: max(a, b) + log1p(exp(-|a - b|))."""
    a, b = promote(a, b, dtype=_float_result(a, b))
    m = maximum(a, b)
    return where(equal(a, b), add(a, np.asarray(math.log(2), dt(a).np)),
                 add(m, log1p(exp(negative(absolute(subtract(a, b)))))))


def hypot(a, b):
    a, b = promote(a, b, dtype=_float_result(a, b))
    return sqrt(add(multiply(a, a), multiply(b, b)))


def float_power(a, b):
    a, b = promote(a, b, dtype=dtypes.float64)
    return power(a, b)


def _compare(opdef):
    def f(a, b):
        return _binary(opdef, a, b, out_bool=True)
    return f


equal = _compare(ops.eq)
not_equal = _compare(ops.ne)
less = _compare(ops.lt)
less_equal = _compare(ops.le)
greater = _compare(ops.gt)
greater_equal = _compare(ops.ge)


def to_bool(x) -> Tracer:
    x = lift(x)
    if dt(x).is_bool:
        return x
    return not_equal(x, np.zeros((), dt(x).np))


def _logical(opdef):
    def f(a, b):
        return _binary(opdef, to_bool(a), to_bool(b), dtype=dtypes.bool_, out_bool=True)
    return f


logical_and = _logical(ops.logical_and)
logical_or = _logical(ops.logical_or)
logical_xor = _logical(ops.logical_xor)


def _bitwise(opdef, name):
    def f(a, b):
        d = result_dtype(a, b)
        if d.is_float:
            raise numpy_error(TypeError, f"ufunc '{name}' not supported for floating-point "
                              "inputs", "use integer or bool arrays")
        return _binary(opdef, a, b, dtype=d)
    return f


bitwise_and = _bitwise(ops.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(ops.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(ops.bitwise_xor, "bitwise_xor")


def _unary(opdef, x, weak_ok=True):
    x = lift(x)
    return emit(x._trace, opdef, [x], weak=x._weak and weak_ok)


def _float_unary(opdef, name):
    def f(x):
        x = lift(x)
        if dt(x).is_bool:
            raise unsupported(f"np.{name} of a bool array (NumPy would return float16)",
                              "convert it with .astype(np.float32) first")
        if dt(x).is_int:
            x = convert(x, dtypes.float64)
        return _unary(opdef, x)
    return f


exp = _float_unary(ops.exp, "exp")
expm1 = _float_unary(ops.expm1, "expm1")
log = _float_unary(ops.log, "log")
log1p = _float_unary(ops.log1p, "log1p")
sqrt = _float_unary(ops.sqrt, "sqrt")
sin = _float_unary(ops.sin, "sin")
cos = _float_unary(ops.cos, "cos")
tan = _float_unary(ops.tan, "tan")
tanh = _float_unary(ops.tanh, "tanh")
sinh = _float_unary(ops.sinh, "sinh")
cosh = _float_unary(ops.cosh, "cosh")
arcsin = _float_unary(ops.arcsin, "arcsin")
arccos = _float_unary(ops.arccos, "arccos")
arctan = _float_unary(ops.arctan, "arctan")
arcsinh = _float_unary(ops.arcsinh, "arcsinh")
arctanh = _float_unary(ops.arctanh, "arctanh")
rint = _float_unary(ops.round, "rint")
erf = _float_unary(ops.erf, "erf")
sigmoid = _float_unary(ops.logistic, "sigmoid")


def log2(x):
    y = log(x)
    return multiply(y, np.asarray(1 / math.log(2), dt(y).np))


def log10(x):
    y = log(x)
    return multiply(y, np.asarray(1 / math.log(10), dt(y).np))


def exp2(x):
    x = lift(x)
    return power(np.asarray(2, _float_result(x).np), x)


def _int_preserving(opdef, name):
    def f(x):
        x = lift(x)
        if not dt(x).is_float:
            if dt(x).is_bool:
                raise unsupported(f"np.{name} of a bool array")
            return x
        return _unary(opdef, x)
    return f


floor = _int_preserving(ops.floor, "floor")
ceil = _int_preserving(ops.ceil, "ceil")


def trunc(x):
    x = lift(x)
    if not dt(x).is_float:
        return x
    return where(less(x, 0), ceil(x), floor(x))


def negative(x):
    x = lift(x)
    if dt(x).is_bool:
        raise numpy_error(TypeError, "the numpy boolean negative, the `-` operator, is not "
                          "supported", "use the `~` operator or np.logical_not instead")
    return _unary(ops.neg, x)


def absolute(x):
    x = lift(x)
    return x if dt(x).is_bool else _unary(ops.abs, x)


def sign(x):
    x = lift(x)
    if dt(x).is_bool:
        raise unsupported("np.sign of a bool array")
    return _unary(ops.sign, x)


def square(x):
    return multiply(x, x)


def reciprocal(x):
    x = lift(x)
    if not dt(x).is_float:
        raise unsupported("np.reciprocal of an integer array", "divide: 1.0 / x")
    return true_divide(np.ones((), dt(x).np), x)


def logical_not(x):
    return _unary(ops.logical_not, to_bool(x), weak_ok=False)


def invert(x):
    x = lift(x)
    if dt(x).is_bool:
        return logical_not(x)
    if dt(x).is_float:
        raise numpy_error(TypeError, "ufunc 'invert' not supported for floating-point "
                          "inputs", "use integer or bool arrays")
    return bitwise_xor(x, np.asarray(-1, dt(x).np))


def _float_test(opdef, int_value):
    def f(x):
        x = lift(x)
        if not dt(x).is_float:
            return broadcast_to(constant(int_value, dtypes.bool_, x._trace), x.shape)
        return _unary(opdef, x, weak_ok=False)
    return f


isnan = _float_test(ops.isnan, False)
isinf = _float_test(ops.isinf, False)
isfinite = _float_test(ops.isfinite, True)


def where(cond, a, b):
    c = to_bool(cond)
    ta, tb = lift_all(a, b)
    target = result_dtype(ta, tb)
    shape = broadcast_shapes(c.shape, ta.shape, tb.shape)
    c = broadcast_to(c, shape)
    ta = broadcast_to(convert(ta, target), shape)
    tb = broadcast_to(convert(tb, target), shape)
    return emit(c._trace, ops.where, [c, ta, tb], weak=ta._weak and tb._weak)


def clip(x, lo=None, hi=None):
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return x


def astype(x, dtype) -> Tracer:
    return convert(lift(x), requested_dtype(dtype))


# ---------------------------------------------------------------------------------------------
# Shapes


def normalize_axis(axis: int, ndim: int) -> int:
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise numpy_error(np.exceptions.AxisError, f"axis {axis} is out of bounds for array "
                          f"of dimension {ndim}", f"use an axis in [-{ndim}, {ndim})")
    return axis % ndim


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise numpy_error(ValueError, f"duplicate value in 'axis': {axis}",
                              "name each axis once")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def reshape(x, shape) -> Tracer:
    x = lift(x)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise numpy_error(ValueError, f"can only specify one unknown dimension: reshape to "
                          f"{tuple(shape)}", "give every size but one")
    if builtins.any(s < -1 for s in shape):
        raise numpy_error(ValueError, f"negative dimensions not allowed: reshape to "
                          f"{tuple(shape)}", "sizes are >= 0, or -1 for one inferred size")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.size % known:
            raise _reshape_error(x, shape)
        shape[shape.index(-1)] = x.size // known
    if math.prod(shape) != x.size:
        raise _reshape_error(x, shape)
    if tuple(shape) == x.shape:
        return x
    if x._value.op is not None and x._value.op.opdef is ops.reshape:
        # reshape of a reshape: one reshape of the original value
        x = Tracer(x._value.op.operands[0], x._trace, x._weak)
        if tuple(shape) == x.shape:
            return x
    return emit(x._trace, ops.reshape, [x], weak=x._weak, shape=shape)


def _reshape_error(x: Tracer, shape) -> ValueError:
    return numpy_error(ValueError, f"cannot reshape array of size {x.size} (shape {x.shape}) "
                       f"into shape {tuple(shape)}",
                       "the new shape must have as many elements as the old one")


def transpose(x, axes=None) -> Tracer:
    x = lift(x)
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    axes = tuple(normalize_axis(a, x.ndim) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise numpy_error(ValueError, f"axes don't match array: axes {tuple(axes)} for an "
                          f"array of shape {x.shape}", "give each axis exactly once")
    if axes == tuple(range(x.ndim)):
        return x
    return emit(x._trace, ops.transpose, [x], weak=x._weak, perm=axes)


def swapaxes(x, a, b):
    x = lift(x)
    perm = list(range(x.ndim))
    a, b = normalize_axis(a, x.ndim), normalize_axis(b, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)


def moveaxis(x, source, destination):
    x = lift(x)
    src = [normalize_axis(s, x.ndim) for s in np.atleast_1d(source)]
    dst = [normalize_axis(d, x.ndim) for d in np.atleast_1d(destination)]
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def squeeze(x, axis=None):
    x = lift(x)
    if axis is None:
        axes = [i for i, n in enumerate(x.shape) if n == 1]
    else:
        axes = normalize_axes(axis, x.ndim)
        if builtins.any(x.shape[a] != 1 for a in axes):
            raise numpy_error(ValueError, "cannot select an axis to squeeze out which has "
                              f"size not equal to one: axis {axis} of shape {x.shape}",
                              "squeeze only axes of size 1, or call squeeze() without axis")
    return reshape(x, [n for i, n in enumerate(x.shape) if i not in axes])


def expand_dims(x, axis):
    x = lift(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = x.ndim + len(axes)
    axes = sorted(normalize_axis(a, ndim) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return reshape(x, shape)


def concatenate(xs, axis=0):
    if len(xs) == 0:
        raise numpy_error(ValueError, "need at least one array to concatenate",
                          "pass a non-empty list of arrays")
    xs = lift_all(*xs)
    if axis is None:
        xs = [reshape(x, (-1,)) for x in xs]
        axis = 0
    target = result_dtype(*xs)
    xs = [convert(x, target) for x in xs]
    if builtins.any(x.ndim == 0 for x in xs):
        raise numpy_error(ValueError, "zero-dimensional arrays cannot be concatenated",
                          "make them 1-D first, e.g. np.atleast_1d(x) or x[None]")
    axis = normalize_axis(axis, xs[0].ndim)
    for i, x in enumerate(xs[1:], 1):
        if x.ndim != xs[0].ndim:
            raise numpy_error(ValueError, "all the input arrays must have same number of "
                              f"dimensions, but the array at index 0 has {xs[0].ndim} "
                              f"dimension(s) and the array at index {i} has {x.ndim} "
                              f"dimension(s) (shapes {xs[0].shape} and {x.shape})",
                              "give them the same number of dimensions (x[None], reshape) or "
                              "use np.hstack / np.stack")
        for d, (n, m) in enumerate(zip(xs[0].shape, x.shape)):
            if d != axis and n != m:
                raise numpy_error(ValueError, "all the input array dimensions except for the "
                                  f"concatenation axis must match exactly, but along "
                                  f"dimension {d}, the array at index 0 has size {n} and the "
                                  f"array at index {i} has size {m} (shapes {xs[0].shape} and "
                                  f"{x.shape}, axis={axis})",
                                  "check the shapes and the axis (axis=-1 joins the last one)")
    if len(xs) == 1:
        return xs[0]
    return emit(xs[0]._trace, ops.concatenate, xs, axis=axis)


def stack(xs, axis=0):
    if len(xs) == 0:
        raise numpy_error(ValueError, "need at least one array to stack",
                          "pass a non-empty list of arrays")
    xs = lift_all(*xs)
    if len({x.shape for x in xs}) != 1:
        raise numpy_error(ValueError, "all input arrays must have the same shape, got "
                          + ", ".join(str(x.shape) for x in xs),
                          "np.stack adds a new axis; to join along an existing one, use "
                          "np.concatenate")
    axis = normalize_axis(axis, xs[0].ndim + 1)
    return concatenate([expand_dims(x, axis) for x in xs], axis)


def flip(x, axis=None):
    x = lift(x)
    axes = normalize_axes(axis, x.ndim)
    axes = tuple(a for a in axes if x.shape[a] > 1)
    if not axes:
        return x
    return emit(x._trace, ops.rev, [x], weak=x._weak, dims=axes)


def slice_(x, starts, stops, steps) -> Tracer:
    x = lift(x)
    if tuple(starts) == (0,) * x.ndim and tuple(stops) == x.shape and set(steps) <= {1}:
        return x
    return emit(x._trace, ops.slice, [x], weak=x._weak, starts=starts, stops=stops,
                steps=steps)


def pad(x, pad_width, mode="constant", constant_values=0):
    x = lift(x)
    if mode != "constant":
        raise unsupported(f"np.pad(mode={mode!r})", "use mode='constant'")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    if not np.isscalar(constant_values) and np.ndim(constant_values) != 0:
        raise unsupported("np.pad with per-axis constant_values", "pass one scalar")
    value = convert(lift(constant_values, x._trace), dt(x))
    if not widths.any():
        return x
    return emit(x._trace, ops.pad, [x, value], weak=x._weak, low=widths[:, 0].tolist(),
                high=widths[:, 1].tolist(), interior=[0] * x.ndim)


def iota(shape, dim, dtype=dtypes.int64, trace=None) -> Tracer:
    return emit(trace or current_trace(), ops.iota, [], shape=tuple(shape), dim=dim,
                dtype=dtype)


# ---------------------------------------------------------------------------------------------
# Reductions


def _reduce(opdef, x, axis, keepdims):
    x = lift(x)
    axes = normalize_axes(axis, x.ndim)
    out = emit(x._trace, opdef, [x], weak=x._weak, axes=axes) if axes else x
    if keepdims:
        out = reshape(out, [1 if i in axes else n for i, n in enumerate(x.shape)])
    return out


def _accumulator(x: Tracer, dtype) -> DType:
    if dtype is not None:
        return requested_dtype(dtype)
    d = dt(x)
    return dtypes.int64 if (d.is_bool or d.is_int) else d


def sum(x, axis=None, keepdims=False, dtype=None):
    x = lift(x)
    return _reduce(ops.reduce_sum, convert(x, _accumulator(x, dtype), x._weak), axis, keepdims)


def prod(x, axis=None, keepdims=False, dtype=None):
    x = lift(x)
    return _reduce(ops.reduce_prod, convert(x, _accumulator(x, dtype), x._weak), axis,
                   keepdims)


def _count(x: Tracer, axis) -> int:
    return math.prod(x.shape[a] for a in normalize_axes(axis, x.ndim))


def mean(x, axis=None, keepdims=False, dtype=None):
    x = lift(x)
    d = requested_dtype(dtype) if dtype is not None else (
        dt(x) if dt(x).is_float else dtypes.float64)
    s = sum(convert(x, d, x._weak), axis, keepdims)
    return true_divide(s, np.asarray(_count(x, axis), d.np))


def var(x, axis=None, keepdims=False, ddof=0):
    x = lift(x)
    m = mean(x, axis, keepdims=True)
    d = subtract(x if dt(x).is_float else convert(x, dtypes.float64), m)
    n = builtins.max(_count(x, axis) - ddof, 0)
    return true_divide(sum(multiply(d, d), axis, keepdims), np.asarray(n, dt(m).np))


def std(x, axis=None, keepdims=False, ddof=0):
    return sqrt(var(x, axis, keepdims, ddof))


def _extremum(opdef, name, x, axis, keepdims, initial):
    """max/min; ``initial`` joins every reduction (NumPy's way to give empty axes a value)."""
    x = lift(x)
    axes = normalize_axes(axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes):
        if initial is None:
            raise numpy_error(ValueError, f"zero-size array to reduction operation {name} "
                              f"which has no identity (np.{name[:3]} over an empty axis of an "
                              f"array of shape {x.shape})",
                              f"give empty axes a value with np.{name[:3]}(x, initial=...), "
                              "or check the shape")
        shape = [1 if i in axes else n for i, n in enumerate(x.shape)] if keepdims else [
            n for i, n in enumerate(x.shape) if i not in axes]
        return full(shape, convert(lift(initial, x._trace), dt(x)))
    out = _reduce(opdef, x, axis, keepdims)
    if initial is None:
        return out
    pick = maximum if opdef is ops.reduce_max else minimum
    return pick(out, convert(lift(initial, x._trace), dt(x)))


def amax(x, axis=None, keepdims=False, initial=None):
    return _extremum(ops.reduce_max, "maximum", x, axis, keepdims, initial)


def amin(x, axis=None, keepdims=False, initial=None):
    return _extremum(ops.reduce_min, "minimum", x, axis, keepdims, initial)


def _all_any(opdef, empty_value, x, axis, keepdims):
    x = to_bool(x)
    axes = normalize_axes(axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes):
        # np.all of nothing is True and np.any of nothing False; reduce_min/max have no identity
        shape = [1 if i in axes else n for i, n in enumerate(x.shape)] if keepdims else [
            n for i, n in enumerate(x.shape) if i not in axes]
        return full(shape, np.bool_(empty_value), trace=x._trace)
    return _reduce(opdef, x, axis, keepdims)


def all(x, axis=None, keepdims=False):
    return _all_any(ops.reduce_min, True, x, axis, keepdims)


def any(x, axis=None, keepdims=False):
    return _all_any(ops.reduce_max, False, x, axis, keepdims)


def _arg(opdef, x, axis, keepdims):
    x = lift(x)
    empty = x.size == 0 if axis is None else x.shape[normalize_axis(axis, x.ndim)] == 0
    if empty:
        raise numpy_error(ValueError, f"attempt to get {opdef.name} of an empty sequence "
                          f"(an axis of size 0 in an array of shape {x.shape})",
                          "check the shape: an empty axis has no largest or smallest element")
    if axis is None:
        out = emit(x._trace, opdef, [reshape(x, (-1,))], axis=0)
        return reshape(out, (1,) * x.ndim) if keepdims else out
    axis = normalize_axis(axis, x.ndim)
    out = emit(x._trace, opdef, [x], axis=axis)
    return expand_dims(out, axis) if keepdims else out


def argmax(x, axis=None, keepdims=False):
    return _arg(ops.argmax, x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    return _arg(ops.argmin, x, axis, keepdims)


# ---------------------------------------------------------------------------------------------
# Contractions


def matmul(a, b, _name="matmul"):
    a, b = lift_all(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise numpy_error(ValueError, f"matmul: Input operand {0 if a.ndim == 0 else 1} does "
                          f"not have enough dimensions (shapes {a.shape} @ {b.shape})",
                          "multiply by a scalar with * instead")
    target = result_dtype(a, b)
    if target.is_bool:
        raise unsupported("matmul of bool arrays", "convert them to a numeric dtype")
    a, b = convert(a, target), convert(b, target)
    a2 = reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        what = (f"shapes {a.shape} and {b.shape} not aligned: {a2.shape[-1]} (dim "
                f"{a.ndim - 1}) != {b2.shape[-2]} (dim {builtins.max(b.ndim - 2, 0)})"
                if _name == "dot" else
                f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size "
                f"{b2.shape[-2]} is different from {a2.shape[-1]}): shapes {a.shape} @ "
                f"{b.shape}")
        raise numpy_error(ValueError, what, "the left operand's last dimension must equal the "
                          "right operand's second-to-last (its only one if 1-D); check the "
                          "shapes, or transpose one operand (x.T)")
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = broadcast_to(a2, batch + a2.shape[-2:])
    b2 = broadcast_to(b2, batch + b2.shape[-2:])
    out = emit(a._trace, ops.matmul, [a2, b2], weak=a._weak and b._weak)
    shape = list(out.shape)
    if b.ndim == 1:
        shape.pop(-1)
    if a.ndim == 1:
        shape.pop(-2 if b.ndim != 1 else -1)
    return reshape(out, shape)


def dot(a, b):
    a, b = lift_all(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, _name="dot")
    # N-d dot: contract a's last axis with b's second-to-last.
    return tensordot(a, b, axes=([a.ndim - 1], [builtins.max(b.ndim - 2, 0)]))


def tensordot(a, b, axes=2):
    a, b = lift_all(a, b)
    if isinstance(axes, (int, np.integer)):
        if not 0 <= axes <= builtins.min(a.ndim, b.ndim):
            raise numpy_error(ValueError, f"tensordot: axes={axes} for shapes {a.shape} and "
                              f"{b.shape}", "axes must be at most the smaller number of "
                              "dimensions")
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = ([axes[0]] if np.isscalar(axes[0]) else list(axes[0]),
                      [axes[1]] if np.isscalar(axes[1]) else list(axes[1]))
        ax_a = [normalize_axis(i, a.ndim) for i in ax_a]
        ax_b = [normalize_axis(i, b.ndim) for i in ax_b]
    if len(ax_a) != len(ax_b) or builtins.any(a.shape[i] != b.shape[j]
                                               for i, j in zip(ax_a, ax_b)):
        raise numpy_error(ValueError, f"shape-mismatch for sum: contracting axes {ax_a} of "
                          f"shape {a.shape} with axes {ax_b} of shape {b.shape}",
                          "the contracted dimensions must have equal sizes")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = math.prod(a.shape[i] for i in ax_a)
    a2 = reshape(transpose(a, free_a + ax_a), (math.prod(a.shape[i] for i in free_a), k))
    b2 = reshape(transpose(b, ax_b + free_b), (k, math.prod(b.shape[i] for i in free_b)))
    return reshape(matmul(a2, b2), [a.shape[i] for i in free_a] + [b.shape[i] for i in free_b])


def outer(a, b):
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def take(x, indices, axis=None, mode="raise"):
    """np.take. mode="raise" checks constant indices now and traced ones when the program
    runs; "clip" and "wrap" bring every index into range first, as NumPy does."""
    x = lift(x)
    if mode not in ("raise", "clip", "wrap"):
        raise numpy_error(ValueError, f"np.take: mode must be 'raise', 'clip' or 'wrap', got "
                          f"{mode!r}", "pass one of those modes")
    idx = lift(indices, x._trace)
    if not dt(idx).is_int:
        raise numpy_error(IndexError, f"np.take: indices must be integers, got {idx.dtype}",
                          "convert them with .astype(np.int64)")
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if n == 0 and idx.size:
        raise numpy_error(IndexError, f"cannot do a non-empty take from an empty axis (axis "
                          f"{axis} of shape {x.shape})", "check the shape of the array")
    idx = convert(idx, dtypes.int64)
    if mode == "clip":          # negative indices clip to 0: they do not count from the end
        idx = clip(idx, np.int64(0), np.int64(n - 1))
    elif mode == "wrap":
        idx = remainder(idx, np.int64(n))
    else:
        # The take op itself counts negative indices from the end and fails on the others.
        known = constant_value(idx)
        if known is not None:
            check_bounds(known, n, axis)
    return emit(x._trace, ops.take, [x, idx], weak=x._weak, axis=axis)


def constant_value(x: Tracer) -> np.ndarray | None:
    """The value of a Tracer made by a constant op (through broadcasts and converts)."""
    op = x._value.op
    while op is not None and op.opdef in (ops.broadcast_in_dim, ops.convert, ops.reshape):
        op = op.operands[0].op
    if op is None or op.opdef is not ops.constant:
        return None
    return np.asarray(op.attrs["value"])


def check_bounds(indices: np.ndarray, n: int, axis: int) -> None:
    """Constant indices out of range fail at trace time, at the user's line."""
    if indices.size:
        bad = indices[(indices < -n) | (indices >= n)]
        if bad.size:
            raise numpy_error(IndexError, f"index {bad.flat[0]} is out of bounds for axis "
                              f"{axis} with size {n}",
                              "indices must lie in [-n, n); np.take(..., mode='clip' or "
                              "'wrap') brings them into range")


def wrap_index(idx: Tracer, n: int) -> Tracer:
    """Negative indices count from the end, as in NumPy."""
    idx = convert(idx, dtypes.int64)
    return where(less(idx, 0), add(idx, np.int64(n)), idx)


def gather_linear(x: Tracer, index_arrays: list[Tracer], axes: list[int],
                  in_range: list[bool] | None = None) -> Tracer:
    """x[..., i0, ..., i1, ...] with index arrays on ``axes`` (broadcast together) and full
    slices elsewhere; the indexed axes are replaced by the broadcast index shape, placed where
    the first indexed axis was. Works by merging the indexed axes into one and taking along it.

    A traced index outside [-n, n) of its axis must fail as in NumPy, but in the merged
    (linear) index it could land on another element; so such positions get the index
    ``merged``, which the take op rejects when the program runs. Constant indices are checked
    now; ``in_range[k]`` marks index arrays known to be in range (iotas).
    """
    shape = broadcast_shapes(*(i.shape for i in index_arrays))
    first = axes[0]
    rest = [a for a in range(x.ndim) if a not in axes]
    perm = rest[:first] + list(axes) + rest[first:]
    xt = transpose(x, perm)
    merged = math.prod(x.shape[a] for a in axes)
    xt = reshape(xt, [x.shape[a] for a in rest[:first]] + [merged]
                 + [x.shape[a] for a in rest[first:]])
    in_range = in_range or [False] * len(index_arrays)
    linear = valid = None
    stride = 1
    for idx, a, known in reversed(list(zip(index_arrays, axes, in_range))):
        n = x.shape[a]
        idx = convert(broadcast_to(idx, shape), dtypes.int64)
        value = constant_value(idx)
        if value is not None:
            check_bounds(value, n, a)
        if len(index_arrays) == 1:
            linear = idx        # the take op counts negatives from the end, rejects the rest
            break
        term = wrap_index(idx, n)
        if value is None and not known:
            ok = logical_and(greater_equal(term, np.int64(0)), less(term, np.int64(n)))
            valid = ok if valid is None else logical_and(valid, ok)
        if stride != 1:
            term = multiply(term, np.int64(stride))
        linear = term if linear is None else add(linear, term)
        stride *= n
    if valid is not None:
        linear = where(valid, linear, np.int64(merged))
    return emit(x._trace, ops.take, [xt, linear], weak=x._weak, axis=first)


def take_along_axis(x, indices, axis):
    x = lift(x)
    idx = lift(indices, x._trace)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    if idx.ndim != x.ndim:
        raise numpy_error(ValueError, "`indices` and `arr` must have the same number of "
                          f"dimensions (shapes {idx.shape} and {x.shape})",
                          "add size-1 axes to the indices, e.g. indices[:, None]")
    shape = broadcast_shapes(tuple(1 if i == axis else n for i, n in enumerate(x.shape)),
                             tuple(1 if i == axis else n for i, n in enumerate(idx.shape)))
    shape = tuple(idx.shape[i] if i == axis else n for i, n in enumerate(shape))
    arrays = [iota(shape, d, trace=x._trace) if d != axis else broadcast_to(idx, shape)
              for d in range(x.ndim)]
    return gather_linear(x, arrays, list(range(x.ndim)), [d != axis for d in range(x.ndim)])


def full(shape, value, dtype=None, trace=None) -> Tracer:
    trace = trace or current_trace()
    if isinstance(value, Tracer):
        v = value if dtype is None else astype(value, dtype)
        return broadcast_to(v, shape)
    arr = np.asarray(value, dtype=None if dtype is None else requested_dtype(dtype).np)
    return broadcast_to(constant(arr, trace=trace), tuple(shape))
