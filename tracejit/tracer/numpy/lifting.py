"""Getting operands into the current trace: ``lift`` (tracers of outer traces are captured,
everything else becomes a constant), ``emit``, and ``promote`` (one dtype, one shape).

The few layout ops that lifting and promotion themselves emit live here too: ``lift`` stacks a
list of tracers (stack, concatenate, expand_dims, reshape) and ``promote`` broadcasts
(broadcast_to). Every other op module builds on this one, so nothing here imports them.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ...ir import dtypes, ops
from ...ir.dtypes import DType
from ..arguments import has_own_semantics, subclass_hint, subclass_semantics
from ..errors import numpy_error, user_location
from ..trace_state import (Trace, check_alive, current_trace, outside_array, recording,
                           written_state)
from ..tracer import Tracer
from ..views import LAYOUT_VIEWS, link
from .rules import (abstract, broadcast_shapes, constant_dtype, dt, has_tracer, normalize_axis,
                    operand_error, requested_dtype, result_dtype, sequence_dtype)


def trace_of(*xs) -> Trace:
    """The innermost trace among the operands' (the current one if none is a Tracer)."""
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
    return recording(best)


def emit(trace: Trace, opdef, operands, weak=False, **attrs) -> Tracer:
    held = recording(trace)             # a cond branch records ops of outer values itself
    if held is not trace:
        trace, operands = held, [lift(x, held) for x in operands]
    op = trace.emit(opdef, [x._value for x in operands], **attrs)
    result = Tracer(op.result, trace, weak)
    if opdef in LAYOUT_VIEWS:
        link(result, operands[0], opdef, attrs)     # a view of its operand, as in NumPy
    return result


def constant(value, dtype: DType | None = None, trace: Trace | None = None,
             weak=False) -> Tracer:
    trace = trace or current_trace()
    if type(value) is np.ndarray or type(value) is np.memmap:
        # an array the function reads through an attribute or a container (cfg.scale,
        # layers[0]): passed at every call rather than baked in (external_arrays.py)
        outside = outside_array(value)
        if outside is not None:
            t = lift(outside, trace)
            return t if dtype is None else convert(t, dtype)
    if has_own_semantics(value):
        # a global or closure np.matrix or masked array (an argument is refused at the call):
        # np.asarray would drop its semantics, silently computing another result than NumPy
        raise numpy_error(TypeError, f"a {subclass_semantics(value)} is used in traced code, "
                          "which would compute with its plain values, a different result "
                          "than NumPy's", subclass_hint(value))
    try:
        arr = np.asarray(value, dtype=dtype.np if dtype else None)
    except OverflowError:
        # The error NumPy raises for x + 2**70 with an integer x, with the user's line.
        raise numpy_error(OverflowError, f"Python integer {_short(value)} out of bounds for "
                          f"{dtype.name if dtype else 'int64'}", _overflow_hint(dtype)) from None
    constant_dtype(arr.dtype)
    return emit(trace, ops.constant, [], weak=weak, value=arr)


def _overflow_hint(dtype: DType | None) -> str:
    if dtype is None or dtype == dtypes.int64 or not dtype.is_int:
        return "use a float constant (e.g. 2.0**70) or keep integers within int64"
    info = np.iinfo(dtype.np)
    return (f"keep it within {dtype.name}'s range [{info.min}, {info.max}], or widen the array "
            "first, e.g. x.astype(np.int64)")


def _short(value) -> str:
    if isinstance(value, int) and abs(value) >= 10**40:
        return f"of {value.bit_length()} bits"
    return repr(value)


def lift(x, trace: Trace | None = None) -> Tracer:
    """x as a Tracer of ``trace``: captures outer tracers, makes constants of everything else."""
    trace = recording(trace) if trace else trace_of(x)
    if isinstance(x, Tracer):
        check_alive(x)
        if x._trace is trace:
            return x
        if x._trace.level > trace.level:
            # a value of an inner trace (a loop body's) reaching an outer one: capturing it
            # would make a parameter nobody passes, so the caller must pick the inner trace
            raise RuntimeError("tracejit internal error: a value of an inner trace was used in "
                               "an enclosing one; please report this with your code")
        if x._trace.state and id(x) in x._trace.state:
            # model state an inner grad wrote into: its new value (Trace.outer_state_writes)
            new = written_state(x, trace)
            if new is not None:
                return new if new._trace is trace else lift(new, trace)
        return Tracer(trace.capture(x), trace, x._weak)
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        kind = dtypes.weak_kind_of(x)
        return constant(x, dtypes.default_dtype_for_weak(kind), trace, weak=True)
    if isinstance(x, (np.ndarray, np.generic)):
        return constant(x, trace=trace)
    if isinstance(x, (list, tuple)):
        if has_tracer(x):
            # [t0, t1, ...] as np.asarray would see it: stacked, promoted without weak scalars.
            d = sequence_dtype(x)
            return stack([convert(lift(e, trace), d) for e in x]) if x else constant(
                np.zeros(0), trace=trace)
        return constant(np.asarray(x), trace=trace)
    raise operand_error(x)


def lift_all(*xs) -> list[Tracer]:
    trace = trace_of(*xs)
    return [lift(x, trace) for x in xs]


def lift_arrays(*xs) -> list[Tracer]:
    """``xs`` as np.asarray makes them, for the NumPy functions that convert their operands
    first (np.dot, np.einsum, np.searchsorted, np.isin, np.append, np.convolve, ...): a Python
    number, written in the code or a traced argument, is an int64/float64/bool array (uint64
    beyond int64), not a weak scalar as in a ufunc: np.dot(float32 array, 2.5) is float64."""
    ts = lift_all(*(np.asarray(x) if isinstance(x, (bool, int, float))
                    and not isinstance(x, Tracer) else x for x in xs))
    return [Tracer(t._value, t._trace, False) if t._weak else t for t in ts]


def convert(x: Tracer, dtype: DType, weak=False) -> Tracer:
    if dt(x) == dtype:
        if x._weak and not weak:
            return Tracer(x._value, x._trace, False)
        return x
    return emit(x._trace, ops.convert, [x], weak=weak, dtype=dtype)


def note_python_int(x, dtype: DType) -> None:
    """A Python int argument ``x`` taking an integer array's ``dtype`` (x + s, a[i] = s):
    NumPy raises OverflowError for a value that does not fit, which only the call knows: the
    caller checks it (driver/entry.py). (Comparisons are exact instead: arithmetic.py.)"""
    if (isinstance(x, Tracer) and x._weak and x._value.op is None and dt(x).is_int
            and dtype.is_int and dtype != dt(x)):
        x._trace.int_casts.setdefault(x._value, []).append((dtype, user_location()))


def astype(x, dtype) -> Tracer:
    return convert(lift(x), requested_dtype(dtype))


def promote(*xs, dtype: DType | None = None) -> list[Tracer]:
    """Lift, promote to one dtype (NumPy's rule unless given) and broadcast to one shape."""
    trace = trace_of(*xs)
    target = dtype or result_dtype(*xs)
    weak = all(abstract(x)[1] for x in xs)
    ts = []
    for x in xs:
        if isinstance(x, Tracer) or (isinstance(x, (list, tuple)) and has_tracer(x)):
            note_python_int(x, target)
            ts.append(convert(lift(x, trace), target, weak))
        else:  # a constant: make it in the target dtype directly
            ts.append(constant(x, target, trace, weak))
    shape = broadcast_shapes(*(t.shape for t in ts))
    return [broadcast_to(t, shape) for t in ts]


# ---------------------------------------------------------------------------------------------
# The layout ops lifting and promotion emit


def reshape(x, shape) -> Tracer:
    x = lift(x)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise numpy_error(ValueError, f"can only specify one unknown dimension: reshape to "
                          f"{tuple(shape)}", "give every size but one")
    if any(s < -1 for s in shape):
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
        # reshape of a reshape: one reshape of the original value (still a view of x)
        inner = Tracer(x._value.op.operands[0], x._trace, x._weak)
        out = inner if tuple(shape) == inner.shape else emit(
            x._trace, ops.reshape, [inner], weak=x._weak, shape=shape)
        out._view = out._cell = None
        link(out, x, ops.reshape, {"shape": shape})
        return out
    return emit(x._trace, ops.reshape, [x], weak=x._weak, shape=shape)


def _reshape_error(x: Tracer, shape) -> ValueError:
    return numpy_error(ValueError, f"cannot reshape array of size {x.size} (shape {x.shape}) "
                       f"into shape {tuple(shape)}",
                       "the new shape must have as many elements as the old one")


def static_ints(v) -> tuple[int, ...]:
    """A shape or counts, one int or a sequence of them, as ints. A traced one raises the
    ConcretizationError saying Python needs its value (jit: static_argnums; grad and vmap
    then trace again with the int static), not "iteration over a 0-d traced array"."""
    if np.ndim(v) == 0:
        return (operator.index(v),)
    return tuple(operator.index(d) for d in v)


def broadcast_to(x, shape) -> Tracer:
    x = lift(x)
    shape = static_ints(shape)
    if x.shape == shape:
        return x
    if any(n < 0 for n in shape):    # else the IR's type check refused it, naming no line
        raise numpy_error(ValueError, f"cannot broadcast to the shape {shape}",
                          "all elements of the broadcast shape must be non-negative")
    if len(shape) < x.ndim or any(
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


def expand_dims(x, axis):
    x = lift(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = x.ndim + len(axes)
    axes = sorted(normalize_axis(a, ndim) for a in axes)
    if len(set(axes)) != len(axes):         # NumPy's error; inserting twice was one axis short
        raise numpy_error(ValueError, "repeated axis", "name each new axis once")
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return reshape(x, shape)


def concatenate(xs, axis=0):
    if len(xs) == 0:
        raise numpy_error(ValueError, "need at least one array to concatenate",
                          "pass a non-empty list of arrays")
    xs = lift_arrays(*xs)           # NumPy's np.asarray of each: a Python number is strong
    if axis is None:
        xs = [reshape(x, (-1,)) for x in xs]
        axis = 0
    target = result_dtype(*xs)
    xs = [convert(x, target) for x in xs]
    if any(x.ndim == 0 for x in xs):
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
    xs = lift_arrays(*xs)
    if len({x.shape for x in xs}) != 1:
        raise numpy_error(ValueError, "all input arrays must have the same shape, got "
                          + ", ".join(str(x.shape) for x in xs),
                          "np.stack adds a new axis; to join along an existing one, use "
                          "np.concatenate")
    axis = normalize_axis(axis, xs[0].ndim + 1)
    return concatenate([expand_dims(x, axis) for x in xs], axis)
