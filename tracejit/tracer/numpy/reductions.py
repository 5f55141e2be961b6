"""Reductions of Tracers over axes: sum, prod, mean, var, std, amax/amin, all/any and
argmax/argmin, with NumPy's accumulator dtypes, keepdims, and its rules for empty axes; and the
statistics built on them (average, ptp, count_nonzero).

Kept apart from the elementwise ops they are built from. The ``numpy_*`` adapters at the end
give the functions NumPy's signatures (``np.sum(a, axis, dtype, out, keepdims, ...)``) for the
dispatch table, refusing keywords that would change the result.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ...ir import dtypes, ops
from ...ir.dtypes import DType
from ..errors import numpy_error, unsupported
from ..tracer import Tracer
from .arithmetic import add, maximum, minimum, multiply, subtract, to_bool, true_divide
from .lifting import (broadcast_to, constant, convert, emit, expand_dims, lift, lift_all,
                      reshape)
from .math_functions import sqrt
from .rules import dt, normalize_axes, normalize_axis, requested_dtype, whole_if_0d
from .shapes import full


def _reduce(opdef, x, axis, keepdims):
    x = lift(x)
    axis = whole_if_0d(axis, x.ndim)
    axes = normalize_axes(axis, x.ndim)
    # over no axes a reduction is its operand, but NumPy's float sum still adds its identity
    # (the sum of -0.0 is +0.0): that one stays an op (simplify makes it x + 0.0)
    emitted = axes or (opdef is ops.reduce_sum and dt(x).is_float)
    out = emit(x._trace, opdef, [x], weak=x._weak, axes=axes) if emitted else x
    if keepdims:
        out = reshape(out, [1 if i in axes else n for i, n in enumerate(x.shape)])
    return out


def _accumulator(x: Tracer, dtype) -> DType:
    if dtype is not None:
        return requested_dtype(dtype)
    d = dt(x)
    # NumPy's: bool and signed ints add in int64, unsigned ints in uint64 (NumPy 2)
    return dtypes.uint64 if d.is_unsigned else dtypes.int64 if (d.is_bool or d.is_int) else d


def _bool_requested(dtype) -> bool:
    """dtype=bool: NumPy's add and multiply loops for bool are logical or and and."""
    return dtype is not None and requested_dtype(dtype).is_bool


def sum(x, axis=None, keepdims=False, dtype=None):
    if _bool_requested(dtype):
        return any(x, axis, keepdims)
    x = lift(x)
    return _reduce(ops.reduce_sum, convert(x, _accumulator(x, dtype), x._weak), axis, keepdims)


def cumsum(x, axis=None, dtype=None):
    """Running sums in NumPy's accumulator dtype (bool and ints: int64, unsigned ints:
    uint64), of the flattened array when ``axis`` is None."""
    if _bool_requested(dtype):
        return to_bool(cumsum(to_bool(x), axis))
    x = lift(x)
    if whole_if_0d(axis, x.ndim) is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    x = convert(x, _accumulator(x, dtype), x._weak)
    return emit(x._trace, ops.cumsum, [x], weak=x._weak, axis=axis)


def cumprod(x, axis=None, dtype=None):
    """Running products in cumsum's accumulator dtype, of the flattened array when ``axis``
    is None; a 0-d array counts as 1-d, as in NumPy (np.cumprod(np.array(5.0), axis=0))."""
    if _bool_requested(dtype):
        return to_bool(cumprod(to_bool(x), axis))
    x = lift(x)
    if axis is None or x.ndim == 0:
        x, axis = reshape(x, (-1,)), 0 if axis is None else axis
    axis = normalize_axis(axis, x.ndim)
    x = convert(x, _accumulator(x, dtype), x._weak)
    return emit(x._trace, ops.cumprod, [x], weak=x._weak, axis=axis)


def prod(x, axis=None, keepdims=False, dtype=None):
    if _bool_requested(dtype):
        return all(x, axis, keepdims)
    x = lift(x)
    return _reduce(ops.reduce_prod, convert(x, _accumulator(x, dtype), x._weak), axis,
                   keepdims)


def _count(x: Tracer, axis) -> int:
    return math.prod(x.shape[a] for a in normalize_axes(axis, x.ndim))


def mean(x, axis=None, keepdims=False, dtype=None):
    """NumPy's: integers in float64; float16 summed and divided in float32, the mean rounded
    to float16."""
    x = lift(x)
    half = dtype is None and dt(x) == dtypes.float16
    d = requested_dtype(dtype) if dtype is not None else (
        dtypes.float32 if half else dt(x) if dt(x).is_float else dtypes.float64)
    s = sum(convert(x, d, x._weak), axis, keepdims, dtype=d)
    if d.is_int:
        # NumPy sums in the integer dtype asked for, divides in float64 and casts back
        # (truncating: np.mean([0, 1], dtype=np.int64) is 0)
        return convert(true_divide(s, np.asarray(_count(x, axis), np.float64)), d)
    out = true_divide(s, np.asarray(_count(x, axis), d.np))
    return convert(out, dtypes.float16) if half else out


def var(x, axis=None, keepdims=False, ddof=0, dtype=None):
    """NumPy's: the mean of a float16 array here is its float16 sum divided in float16.
    ``dtype``: NumPy sums in it; here the values are converted to it first (the same result
    up to the roundings of a float64 array's deviations)."""
    x = lift(x) if dtype is None else convert(lift(x), requested_dtype(dtype))
    if dt(x) == dtypes.float16:
        m = _half_divided(sum(x, axis, keepdims=True), _count(x, axis))
    else:
        m = mean(x, axis, keepdims=True)
    d = subtract(x if dt(x).is_float else convert(x, dtypes.float64), m)
    n = builtins.max(_count(x, axis) - ddof, 0)
    total = sum(multiply(d, d), axis, keepdims)
    if dt(total) == dtypes.float16:
        return _half_divided(total, n)
    return true_divide(total, np.asarray(n, dt(m).np))


def _half_divided(total, count: int):
    """A float16 sum divided by an element count as NumPy's var does (by an intp: in float64,
    rounded once to float16): float16(count) is inf beyond 65504 elements."""
    return convert(true_divide(convert(total, dtypes.float64), np.asarray(count, np.float64)),
                   dtypes.float16)


def std(x, axis=None, keepdims=False, ddof=0, dtype=None):
    return sqrt(var(x, axis, keepdims, ddof, dtype))


def _extremum(opdef, name, x, axis, keepdims, initial):
    """max/min; ``initial`` joins every reduction (NumPy's way to give empty axes a value)."""
    x = lift(x)
    axis = whole_if_0d(axis, x.ndim)
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
        return full(shape, _initial(initial, x))
    out = _reduce(opdef, x, axis, keepdims)
    if initial is None:
        return out
    pick = maximum if opdef is ops.reduce_max else minimum
    return pick(out, _initial(initial, x))


def _initial(initial, x: Tracer) -> Tracer:
    """``initial`` in x's dtype: a Python int beyond an integer dtype's range is NumPy's
    OverflowError (np.max(u8, initial=-1)), not a wrapped value."""
    if dt(x).is_int and isinstance(initial, int) and not isinstance(initial, bool):
        return constant(initial, dt(x), x._trace)
    return convert(lift(initial, x._trace), dt(x))


def amax(x, axis=None, keepdims=False, initial=None):
    return _extremum(ops.reduce_max, "maximum", x, axis, keepdims, initial)


def amin(x, axis=None, keepdims=False, initial=None):
    return _extremum(ops.reduce_min, "minimum", x, axis, keepdims, initial)


def _all_any(opdef, empty_value, x, axis, keepdims):
    x = to_bool(x)
    axis = whole_if_0d(axis, x.ndim)
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
    axis = whole_if_0d(axis, x.ndim)
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
# Statistics built on the reductions


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if returned:        # (the average, and the sum of the weights in its shape and dtype)
        avg = average(a, axis, weights, keepdims=keepdims)
        if weights is None:
            x = lift(a)
            scl = np.asarray(x.size // max(avg.size, 1), avg.dtype)
        else:
            x, w = lift_all(a, weights)
            if w.shape != x.shape:
                ax = normalize_axis(axis, x.ndim)
                w = reshape(w, [w.shape[0] if i == ax else 1 for i in range(x.ndim)])
            scl = convert(sum(broadcast_to(w, x.shape), axis, keepdims), dt(avg))
        return avg, broadcast_to(lift(scl, avg._trace), avg.shape)
    if weights is None:
        return mean(a, axis, keepdims)
    x, w = lift_all(a, weights)
    if w.shape != x.shape:
        if axis is None or w.ndim != 1:
            raise unsupported("np.average with weights of a different shape and no axis")
        ax = normalize_axis(axis, x.ndim)
        w = reshape(w, [w.shape[0] if i == ax else 1 for i in range(x.ndim)])
    return true_divide(sum(multiply(x, w), axis, keepdims),
                       sum(broadcast_to(w, x.shape), axis, keepdims))


def count_nonzero(a, axis=None, *, keepdims=False):
    return sum(to_bool(a), axis, keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
    return subtract(amax(a, axis, keepdims), amin(a, axis, keepdims))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """np.allclose: all of isclose, a traced bool (NumPy's Python bool needs the values)."""
    from .math_functions import isclose
    return all(isclose(a, b, rtol, atol, equal_nan))


# ---------------------------------------------------------------------------------------------
# The NaN-ignoring reductions (np.nansum, ...), as NumPy's nanfunctions compute them: NaN
# replaced by the reduction's identity, counts of the non-NaN values. Integer and bool arrays
# hold no NaN: they are the plain reductions.


def _nan_mask(x: Tracer):
    from .math_functions import isnan
    return isnan(x) if dt(x).is_float else None


def _replace_nan(x, value):
    """x with NaN replaced by ``value`` (NumPy's _replace_nan), and the mask (None for
    non-float arrays)."""
    from .arithmetic import where
    x = lift(x)
    mask = _nan_mask(x)
    if mask is None:
        return x, None
    return where(mask, constant(np.asarray(value, dt(x).np), trace=x._trace), x), mask


def _divide_by_count(total, count):
    """NumPy's _divide_by_count: the float total divided by an intp count in float64, cast
    back to the total's dtype."""
    q = true_divide(convert(total, dtypes.float64), convert(count, dtypes.float64))
    return convert(q, dt(total))


def nansum(x, axis=None, keepdims=False, dtype=None):
    return sum(_replace_nan(x, 0)[0], axis, keepdims, dtype)


def nanprod(x, axis=None, keepdims=False, dtype=None):
    return prod(_replace_nan(x, 1)[0], axis, keepdims, dtype)


def nancumsum(x, axis=None, dtype=None):
    return cumsum(_replace_nan(x, 0)[0], axis, dtype)


def nancumprod(x, axis=None, dtype=None):
    return cumprod(_replace_nan(x, 1)[0], axis, dtype)


def _non_nan_count(mask, axis, keepdims):
    from .arithmetic import logical_not
    return sum(logical_not(mask), axis, keepdims)


def nanmean(x, axis=None, keepdims=False, dtype=None):
    arr, mask = _replace_nan(x, 0)
    if mask is None:
        return mean(arr, axis, keepdims, dtype)
    tot = sum(arr, axis, keepdims, dtype)
    return _divide_by_count(tot, _non_nan_count(mask, axis, keepdims))


def nanvar(x, axis=None, keepdims=False, ddof=0, dtype=None):
    """NumPy's: deviations from the NaN-ignoring mean, NaN where fewer than ``ddof + 1``
    values are not NaN."""
    from .arithmetic import less_equal, where
    arr, mask = _replace_nan(x, 0)
    if mask is None:
        return var(arr, axis, keepdims, ddof, dtype)
    cnt = _non_nan_count(mask, axis, True)
    avg = _divide_by_count(sum(arr, axis, True, dtype), cnt)
    dev = subtract(arr, avg)
    dev = convert(dev, dt(arr))          # (NumPy subtracts into arr, casting unsafe)
    dev = where(mask, constant(np.asarray(0, dt(dev).np), trace=dev._trace), dev)
    total = sum(multiply(dev, dev), axis, keepdims, dtype)
    dof = subtract(_non_nan_count(mask, axis, keepdims), np.int64(ddof))
    out = _divide_by_count(total, dof)
    return where(less_equal(dof, 0), constant(np.asarray(np.nan, dt(out).np),
                                              trace=out._trace), out)


def nanstd(x, axis=None, keepdims=False, ddof=0, dtype=None):
    return sqrt(nanvar(x, axis, keepdims, ddof, dtype))


def _nan_extremum(f, fill, x, axis, keepdims, initial):
    """np.nanmax/np.nanmin (NumPy's fmax.reduce): NaN only where a slice is all NaN."""
    from .arithmetic import where
    arr, mask = _replace_nan(x, fill)
    out = f(arr, axis, keepdims, initial)
    if mask is None or initial is not None:
        return out
    return where(all(mask, axis, keepdims), constant(np.asarray(np.nan, dt(out).np),
                                                     trace=out._trace), out)


def nanmax(x, axis=None, keepdims=False, initial=None):
    return _nan_extremum(amax, -np.inf, x, axis, keepdims, initial)


def nanmin(x, axis=None, keepdims=False, initial=None):
    return _nan_extremum(amin, np.inf, x, axis, keepdims, initial)


def _nan_arg(f, fill, x, axis, keepdims):
    """np.nanargmax/np.nanargmin: NaN replaced by -inf (+inf). An all-NaN slice, where NumPy
    raises ValueError, gets an out-of-range index that a take rejects when the program runs
    (an IndexError naming the all-NaN slice is not possible from inside a kernel)."""
    from .arithmetic import where
    from .gather import take
    arr, mask = _replace_nan(x, fill)
    axis = whole_if_0d(axis, arr.ndim)
    out = f(arr, axis, keepdims)
    if mask is None:
        return out
    bad = all(mask, axis, keepdims)
    n = arr.size if axis is None else arr.shape[normalize_axis(axis, arr.ndim)]
    # the check: take from an array of n elements at index n where a slice is all NaN
    probe = where(bad, np.int64(n), convert(out, dtypes.int64))
    checked = take(full((n,), np.int64(0), trace=arr._trace), reshape(probe, (-1,)))
    return add_zero(out, reshape(convert(checked, dt(out)), out.shape))


def add_zero(x, zero):
    """x + zero (a zero that keeps an op, here a runtime check, alive)."""
    from .arithmetic import add
    return add(x, zero)


def nanargmax(x, axis=None, keepdims=False):
    return _nan_arg(argmax, -np.inf, x, axis, keepdims)


def nanargmin(x, axis=None, keepdims=False):
    return _nan_arg(argmin, np.inf, x, axis, keepdims)


# ---------------------------------------------------------------------------------------------
# NumPy's signatures, for the dispatch table


def numpy_reduction(f):
    """np.sum, np.prod, np.mean and their NaN-ignoring forms; ``where`` and ``initial``
    (sum, prod and their nan forms) as NumPy's: masked-out elements count as the identity,
    ``initial`` joins every reduction."""
    def g(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        where = kw.pop("where", True)
        initial = kw.pop("initial", np._NoValue)
        _no_extra(f.__name__, kw, ())
        if f in (mean, nanmean):
            if initial is not np._NoValue:
                raise unsupported(f"np.{f.__name__} with ['initial']")
            if where is not True:
                return _masked_mean(a, where, axis, keepdims, dtype, nan=f is nanmean)
            return f(a, axis, keepdims, dtype)
        if where is not True:
            a = _masked(a, where, 1 if f in (prod, nanprod) else 0)
        result = f(a, axis, keepdims, dtype)
        if initial is not np._NoValue and initial is not None:
            combine = multiply if f in (prod, nanprod) else add
            result = convert(combine(result, _initial(initial, result)), dt(result))
        return result
    return g


def _masked(a, where, fill):
    """``a`` with the elements ``where`` leaves out replaced by ``fill`` (a reduction's
    identity); ``where`` broadcasts to ``a``'s shape, as NumPy's where= does."""
    from .arithmetic import where as select
    x = lift(a)
    mask = broadcast_to(to_bool(lift(where, x._trace)), x.shape)
    return select(mask, x, convert(lift(fill, x._trace), dt(x)))


def _where_count(x, where, axis, keepdims, d):
    """How many elements ``where`` selects along the reduced axes, in dtype ``d``."""
    mask = broadcast_to(to_bool(lift(where, x._trace)), x.shape)
    return sum(convert(mask, d), axis, keepdims, dtype=d)


def _masked_mean(a, where, axis, keepdims, dtype, nan=False):
    """np.mean(where=...): the sum of the selected elements over their count (NaN where none
    is selected, as NumPy's 0/0); nanmean also leaves out NaN."""
    from .arithmetic import logical_and, logical_not
    x = lift(a)
    mask = broadcast_to(to_bool(lift(where, x._trace)), x.shape)
    if nan and _nan_mask(x) is not None:
        mask = logical_and(mask, logical_not(_nan_mask(x)))
    d = requested_dtype(dtype) if dtype is not None else (
        dt(x) if dt(x).is_float else dtypes.float64)
    s = sum(_masked(convert(x, d), mask, 0), axis, keepdims, dtype=d)
    return true_divide(s, _where_count(x, mask, axis, keepdims, d))


def _masked_var(a, where, axis, keepdims, ddof, dtype, nan=False, root=False):
    """np.var/np.std(where=...): squared deviations from the masked mean, over the selected
    elements, divided by max(count - ddof, 0)."""
    from .arithmetic import logical_and, logical_not
    x = lift(a) if dtype is None else convert(lift(a), requested_dtype(dtype))
    if not dt(x).is_float:
        x = convert(x, dtypes.float64)
    mask = broadcast_to(to_bool(lift(where, x._trace)), x.shape)
    if nan and _nan_mask(x) is not None:
        mask = logical_and(mask, logical_not(_nan_mask(x)))
    m = _masked_mean(x, mask, axis, True, None)
    dev = _masked(subtract(x, m), mask, 0)
    total = sum(multiply(dev, dev), axis, keepdims)
    n = maximum(subtract(_where_count(x, mask, axis, keepdims, dt(total)), ddof), 0)
    out = true_divide(total, convert(n, dt(total)))
    return sqrt(out) if root else out


def _no_extra(name, kw, names, accepted=()):
    """Refuse keywords in ``names`` that are given, and any other than ``accepted``."""
    bad = [k for k in names if kw.get(k, np._NoValue) is not np._NoValue and
           kw.get(k) is not None]
    if bad or set(kw) - set(names) - set(accepted):
        raise unsupported(f"np.{name} with "
                          f"{sorted(set(bad) | (set(kw) - set(names) - set(accepted)))}")


def numpy_minmax(f):
    """np.max, np.min, np.nanmax, np.nanmin (which take ``initial``), np.all, np.any; with
    ``where``, the left-out elements are ``initial`` (max/min, which NumPy requires then), or
    True for all and False for any."""
    def g(a, axis=None, out=None, keepdims=False, **kw):
        where = kw.pop("where", True)
        if f in (amax, amin, nanmax, nanmin):
            _no_extra(f.__name__, kw, (), accepted=("initial",))
            initial = kw.get("initial", np._NoValue)
            initial = None if initial is np._NoValue else initial
            if where is not True:
                if initial is None:
                    op = "maximum" if f in (amax, nanmax) else "minimum"
                    raise numpy_error(ValueError, f"reduction operation '{op}' does not have "
                                      "an identity, so to use a where mask one has to specify "
                                      "'initial'", f"pass initial= with where= to "
                                      f"np.{f.__name__}")
                a = _masked(a, where, initial)
            return f(a, axis, keepdims, initial)
        _no_extra(f.__name__, kw, ("initial",))
        if where is not True:
            a = _masked(to_bool(a), where, f is all)
        return f(a, axis, keepdims)
    return g


def numpy_arg(f):
    """np.argmax, np.argmin."""
    def g(a, axis=None, out=None, *, keepdims=False):
        return f(a, axis, keepdims)
    return g


def numpy_var(f):
    """np.var, np.std, np.nanvar, np.nanstd."""
    def g(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        where = kw.pop("where", True)
        _no_extra(f.__name__, kw, ("mean", "correction"))
        if where is not True:
            return _masked_var(a, where, axis, keepdims, ddof, dtype,
                               nan=f in (nanvar, nanstd), root=f in (std, nanstd))
        return f(a, axis, keepdims, ddof, dtype)
    return g


def array_equal(a1, a2, equal_nan=False):
    """np.array_equal: shapes compared now (a Python False when they differ, as NumPy's),
    values as a traced bool."""
    from .arithmetic import equal, logical_and, logical_or
    a, b = lift_all(a1, a2)
    if a.shape != b.shape:
        return False
    same = equal(a, b)
    if equal_nan and _nan_mask(a) is not None and _nan_mask(b) is not None:
        same = logical_or(same, logical_and(_nan_mask(a), _nan_mask(b)))
    return all(same)


def array_equiv(a1, a2):
    """np.array_equiv: equal after broadcasting (a Python False when the shapes do not
    broadcast)."""
    from .arithmetic import equal
    a, b = lift_all(a1, a2)
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        return False
    return all(equal(a, b))
