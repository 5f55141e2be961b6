"""Sorting along an axis: np.sort, np.argsort and x.argsort (x.sort() sorts in place:
assignment's subject, not this module's).

Every stage sorts with NumPy's own sort of the kind asked for (the interpreter and the NumPy tier
run the ops' reference implementations, compiled programs call NumPy from their entry), so the
results are NumPy's exactly: NaN last, and ties in NumPy's order, which for the default kind
("quicksort", an unstable introsort) is not their original order; kind="stable" (or
stable=True) keeps it. The gradient of sort scatters the cotangent back through the sorting
permutation; argsort's integer result has none.
"""
from __future__ import annotations

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error
from .lifting import emit, lift, reshape
from .rules import normalize_axis

_KINDS = {"q": "quicksort", "h": "heapsort", "m": "stable", "s": "stable"}


def sort_kind(kind, stable) -> str:
    """NumPy's reading of ``kind=`` and ``stable=``: the first letter names the kind."""
    if stable is not None:
        if kind is not None:
            raise numpy_error(ValueError, "`kind` and keyword parameters can't be provided at "
                              "the same time. Use only one of them.", "pass kind or stable")
        return "stable" if stable else "quicksort"
    if kind is None:
        return "quicksort"
    if not isinstance(kind, str):
        raise numpy_error(TypeError, f"sort kind must be str, not {type(kind).__name__}",
                          "pass 'quicksort', 'heapsort' or 'stable'")
    if kind[:1].lower() not in _KINDS:
        raise numpy_error(ValueError, "sort kind must be one of 'quick', 'heap', or 'stable' "
                          f"(got {kind!r})", "pass 'quicksort', 'heapsort' or 'stable'")
    return _KINDS[kind[:1].lower()]


def _check_order(order):
    if order is not None:
        raise numpy_error(ValueError, "Cannot specify order when the array has no fields.",
                          "drop order=: traced arrays have no named fields")


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """np.sort: a sorted copy; axis=None sorts the flattened array."""
    x = lift(a)
    kind = sort_kind(kind, stable)
    _check_order(order)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = normalize_axis(axis, x.ndim)
    return emit(x._trace, ops.sort, [x], weak=x._weak, axis=axis, kind=kind)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """np.argsort: int64 indices that sort ``a`` along the axis; axis=None sorts the flattened
    array, and a 0-d array counts as 1-d (NumPy gives array([0]))."""
    x = lift(a)
    kind = sort_kind(kind, stable)
    _check_order(order)
    if axis is None or x.ndim == 0:
        x, axis = reshape(x, (-1,)), 0 if axis is None else axis
    axis = normalize_axis(axis, x.ndim)
    return emit(x._trace, ops.argsort, [x], axis=axis, kind=kind)


# ---------------------------------------------------------------------------------------------
# Order statistics: np.median, np.quantile and np.percentile (method="linear", NumPy's default)


def _along_last_axis(a, axis):
    """``a`` with the reduced axes moved to the end and merged into one, and the result's
    shape with keepdims=True."""
    from .shapes import transpose
    x = lift(a)
    axes = (tuple(range(x.ndim)) if axis is None else
            tuple(normalize_axis(ax, x.ndim) for ax in (
                axis if isinstance(axis, (tuple, list)) else (axis,))))
    kept = [i for i in range(x.ndim) if i not in axes]
    n = 1
    for ax in axes:
        n *= x.shape[ax]
    if x.ndim:
        x = transpose(x, kept + list(axes))
    x = reshape(x, tuple(x.shape[:len(kept)]) + (n,))
    return x, tuple(1 if i in axes else d for i, d in enumerate(lift(a).shape))


def _order_statistic(name, a, q, axis, keepdims, method, fraction):
    """The linear interpolation between the sorted values at ``q * (n - 1)`` (NumPy's
    default method), with NaN where a reduced slice holds one, as NumPy gives."""
    from .arithmetic import add, multiply, subtract, where
    from .gather import constant_value, take
    from .lifting import constant, convert
    from .math_functions import isnan
    from .reductions import any as any_
    from .rules import constant_dtype, dt
    if method != "linear":
        raise numpy_error(ValueError, f"{name}: only method='linear' is supported under "
                          f"tracing, got {method!r}", "drop method=")
    if hasattr(q, "_trace") and constant_value(q) is not None:
        q = constant_value(q)
    traced_q = hasattr(q, "_trace")
    if not traced_q:
        qs = np.asarray(q, dtype=np.float64) * fraction
        if qs.size and not ((qs >= 0) & (qs <= 1)).all():
            raise numpy_error(ValueError, f"{name}: q must be in the range "
                              f"[0, {1 / fraction:g}]", "pass q within the range")
    x, kept_shape = _along_last_axis(a, axis)
    # the result's dtype: NumPy's own on a one-element array of the input's dtype
    probe = (np.quantile if fraction == 1.0 else np.percentile)(
        np.zeros(1, lift(a).dtype), np.zeros(q.shape, q.dtype) if traced_q else q)
    d = constant_dtype(np.result_type(probe))
    n = x.shape[-1]
    if n == 0:
        raise numpy_error(IndexError, f"{name} of an empty array", "reduce a non-empty array")
    s = convert(sort(x, axis=-1), d)
    if traced_q:
        # (a q out of range, which NumPy refuses, is clamped: its value is not known here)
        from .arithmetic import clip, minimum
        from .math_functions import floor
        qs = lift(q, x._trace)
        pos = multiply(reshape(convert(qs, dtypes.float64), (-1,)), fraction * (n - 1))
        lo = clip(convert(floor(pos), dtypes.int64), 0, n - 1)
        hi = minimum(add(lo, 1), n - 1)
        t = convert(clip(subtract(pos, convert(lo, dtypes.float64)), 0, 1), d)
    else:
        pos = qs.reshape(-1) * (n - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        t = constant((pos - lo).astype(d.np), trace=x._trace)
    lo_v, hi_v = take(s, lo, axis=-1), take(s, hi, axis=-1)
    out = add(lo_v, multiply(subtract(hi_v, lo_v), t))
    if dt(x).is_float:
        nan = constant(np.array(np.nan, d.np), trace=x._trace)
        out = where(reshape(any_(isnan(x), axis=-1), x.shape[:-1] + (1,)), nan, out)
    # (..., q) -> q's axes first, then the kept axes
    from .shapes import transpose
    out = transpose(out, [out.ndim - 1] + list(range(out.ndim - 1)))
    rest = kept_shape if keepdims else x.shape[:-1]
    return reshape(out, qs.shape + tuple(rest))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    if weights is not None or interpolation is not None:
        raise numpy_error(TypeError, "np.quantile: weights= and interpolation= are not "
                          "supported under tracing", "drop them")
    return _order_statistic("np.quantile", a, q, axis, keepdims, method, 1.0)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    if weights is not None or interpolation is not None:
        raise numpy_error(TypeError, "np.percentile: weights= and interpolation= are not "
                          "supported under tracing", "drop them")
    return _order_statistic("np.percentile", a, q, axis, keepdims, method, 0.01)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """np.median: the mean of the middle one or two sorted values (NaN where a slice holds
    one); NumPy's dtypes (float64 for integers)."""
    from .arithmetic import where
    from .gather import take
    from .lifting import constant
    from .math_functions import isnan
    from .reductions import any as any_, mean
    from .rules import dt
    x, kept_shape = _along_last_axis(a, axis)
    n = x.shape[-1]
    shape = kept_shape if keepdims else x.shape[:-1]
    if n == 0:
        d = np.result_type(np.mean(np.zeros(1, lift(a).dtype)))
        return constant(np.full(shape, np.nan, d), trace=x._trace)
    s = sort(x, axis=-1)
    middle = take(s, [n // 2] if n % 2 else [n // 2 - 1, n // 2], axis=-1)
    out = mean(middle, axis=-1)
    if dt(x).is_float:
        nan = constant(np.array(np.nan, out.dtype), trace=x._trace)
        out = where(any_(isnan(x), axis=-1), nan, out)
    return reshape(out, shape)


# ---------------------------------------------------------------------------------------------
# NaN-ignoring order statistics: np.nanmedian, np.nanquantile, np.nanpercentile. NaN sorts
# last, so a slice's non-NaN values are its first ``count`` sorted ones; the positions are
# computed from that traced count. An all-NaN slice gives NaN, as in NumPy.


def _sorted_with_counts(a, axis):
    from .arithmetic import logical_not
    from .lifting import convert
    from .math_functions import isnan
    from .reductions import sum as sum_
    from .rules import dt
    x, kept_shape = _along_last_axis(a, axis)
    s = sort(x, axis=-1)
    if dt(x).is_float:
        c = sum_(logical_not(isnan(x)), axis=-1, keepdims=True)
    else:
        from .shapes import full
        c = full(x.shape[:-1] + (1,), np.int64(x.shape[-1]), trace=x._trace)
    return x, s, convert(c, dtypes.int64), kept_shape


def _at(s, index):
    """s[..., index] for a traced index of shape (..., k), clamped into range."""
    from .arithmetic import clip
    from .gather import take_along_axis
    return take_along_axis(s, clip(index, np.int64(0), np.int64(max(s.shape[-1] - 1, 0))),
                           axis=-1)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """np.nanmedian: the median of each slice's non-NaN values (NaN where there are none);
    NumPy's dtypes (float64 for integers)."""
    from .arithmetic import add, equal, floor_divide, remainder, subtract, where
    from .lifting import concatenate, constant, convert
    from .reductions import mean
    from .rules import dt
    x0 = lift(a)
    if not dt(x0).is_float:
        return median(a, axis, keepdims=keepdims)
    x, s, c, kept_shape = _sorted_with_counts(a, axis)
    shape = kept_shape if keepdims else x.shape[:-1]
    if x.shape[-1] == 0:
        return constant(np.full(shape, np.nan, x0.dtype), trace=x._trace)
    lo = _at(s, floor_divide(subtract(c, np.int64(1)), np.int64(2)))
    hi = _at(s, floor_divide(c, np.int64(2)))
    pair = mean(concatenate([lo, hi], -1), axis=-1, keepdims=True)
    c_odd = equal(remainder(c, np.int64(2)), np.int64(1))
    out = where(c_odd, lo, pair)
    out = where(equal(c, np.int64(0)), constant(np.array(np.nan, x0.dtype), trace=x._trace), out)
    return reshape(out, shape)


def _nan_order_statistic(name, a, q, axis, keepdims, method, fraction):
    """NumPy's linear method on each slice's non-NaN values: the virtual index q (c - 1) and
    NumPy's _lerp (from the upper value where t >= 0.5)."""
    from .arithmetic import (add, clip, equal, greater_equal, minimum, multiply, subtract,
                             where)
    from .gather import constant_value
    from .lifting import constant, convert
    from .math_functions import floor
    from .rules import constant_dtype, dt
    if method != "linear":
        raise numpy_error(ValueError, f"{name}: only method='linear' is supported under "
                          f"tracing, got {method!r}", "drop method=")
    if hasattr(q, "_trace"):
        if constant_value(q) is None:
            from ..errors import unsupported
            raise unsupported(f"{name} with a traced q", "pass q as a constant")
        q = constant_value(q)
    qs = np.asarray(q, dtype=np.float64) * fraction
    if qs.size and not ((qs >= 0) & (qs <= 1)).all():
        raise numpy_error(ValueError, f"{name}: q must be in the range [0, {1 / fraction:g}]",
                          "pass q within the range")
    x0 = lift(a)
    probe = (np.nanquantile if fraction == 1.0 else np.nanpercentile)(np.zeros(1, x0.dtype), q)
    d = constant_dtype(np.result_type(probe))
    if not dt(x0).is_float:
        return _order_statistic(name, a, q, axis, keepdims, method, fraction)
    x, s, c, kept_shape = _sorted_with_counts(a, axis)
    rest = kept_shape if keepdims else x.shape[:-1]
    if x0.size == 0:        # NumPy returns np.nanmean of the empty array: no axis for q
        return constant(np.full(rest, np.nan, d.np), trace=x._trace)
    s = convert(s, d)
    qv = constant(qs.reshape(-1).astype(np.float64), trace=x._trace)       # (k,)
    pos = multiply(qv, convert(subtract(c, np.int64(1)), dtypes.float64))   # (..., k)
    lo_i = clip(convert(floor(pos), dtypes.int64), np.int64(0), None)
    hi_i = minimum(add(lo_i, np.int64(1)), subtract(c, np.int64(1)))
    t = convert(subtract(pos, convert(lo_i, dtypes.float64)), d)
    lo_v, hi_v = _at(s, lo_i), _at(s, hi_i)
    diff = subtract(hi_v, lo_v)
    one = np.asarray(1, d.np)
    out = where(greater_equal(t, np.asarray(0.5, d.np)),
                subtract(hi_v, multiply(diff, subtract(one, t))), add(lo_v, multiply(diff, t)))
    out = where(equal(c, np.int64(0)), constant(np.array(np.nan, d.np), trace=x._trace), out)
    from .shapes import transpose
    out = transpose(out, [out.ndim - 1] + list(range(out.ndim - 1)))
    return reshape(out, qs.shape + tuple(rest))


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    if weights is not None or interpolation is not None:
        raise numpy_error(TypeError, "np.nanquantile: weights= and interpolation= are not "
                          "supported under tracing", "drop them")
    return _nan_order_statistic("np.nanquantile", a, q, axis, keepdims, method, 1.0)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    if weights is not None or interpolation is not None:
        raise numpy_error(TypeError, "np.nanpercentile: weights= and interpolation= are not "
                          "supported under tracing", "drop them")
    return _nan_order_statistic("np.nanpercentile", a, q, axis, keepdims, method, 0.01)


# ---------------------------------------------------------------------------------------------
# Searching a sorted array: np.searchsorted (a binary search of a fixed number of steps, one
# take each, so any sorted ``a`` gives NumPy's indices), np.digitize and np.interp built on it;
# np.isin (each element against every test element).


def _before(a, b):
    """NumPy's sort order, NaN last: a < b or (b is NaN and a is not)."""
    from .arithmetic import less, logical_and, logical_not, logical_or
    from .math_functions import isnan
    from .rules import dt
    if not dt(a).is_float:
        return less(a, b)
    return logical_or(less(a, b), logical_and(isnan(b), logical_not(isnan(a))))


def searchsorted(a, v, side="left", sorter=None):
    from .arithmetic import (add, floor_divide, less, logical_and, logical_not, minimum,
                             where)
    from .gather import take
    from .lifting import convert, lift_all
    from .rules import result_dtype
    from .shapes import full
    if side not in ("left", "right") and not (isinstance(side, str) and side[:1].lower()
                                               in ("l", "r")):
        raise numpy_error(ValueError, f"side must be 'left' or 'right' (got {side!r})",
                          "pass side='left' or side='right'")
    right = side[:1].lower() == "r"
    xa, xv = lift_all(a, v)
    if xa.ndim != 1:
        raise numpy_error(ValueError, "object too deep for desired array",
                          "np.searchsorted takes a 1-D sorted array")
    if sorter is not None:
        xa = take(xa, sorter)
    d = result_dtype(xa, xv)
    xa, xv = convert(xa, d), convert(xv, d)
    n = xa.shape[0]
    lo = full(xv.shape, np.int64(0), trace=xv._trace)
    hi = full(xv.shape, np.int64(n), trace=xv._trace)
    for _ in range(n.bit_length()):
        mid = floor_divide(add(lo, hi), np.int64(2))
        am = take(xa, minimum(mid, np.int64(n - 1)))
        go_up = logical_not(_before(xv, am)) if right else _before(am, xv)
        active = less(lo, hi)
        lo = where(logical_and(active, go_up), add(mid, np.int64(1)), lo)
        hi = where(logical_and(active, logical_not(go_up)), mid, hi)
    return lo


def digitize(x, bins, right=False):
    """np.digitize: searchsorted on increasing bins, from the end on decreasing ones (traced
    bins: both, chosen by whether they increase)."""
    from .arithmetic import greater_equal, subtract, where
    from .gather import constant_value
    from .reductions import all as all_
    from .shapes import flip, slice_
    b = lift(bins)
    if b.ndim != 1:
        raise numpy_error(ValueError, "object too deep for desired array", "pass 1-D bins")
    side = "left" if right else "right"
    n = b.shape[0]
    known = constant_value(b)
    if known is not None:
        increasing = bool(np.all(known[1:] >= known[:-1]))
        if not increasing and not np.all(known[1:] <= known[:-1]):
            raise numpy_error(ValueError, "bins must be monotonically increasing or "
                              "decreasing", "sort the bins")
    up = searchsorted(b, x, side=side)
    down = subtract(np.int64(n), searchsorted(flip(b, 0), x, side=side))
    if known is not None:
        return up if increasing else down
    if n < 2:
        return up
    inc = all_(greater_equal(slice_(b, [1], [n], [1]), slice_(b, [0], [n - 1], [1])))
    return where(inc, up, down)


def interp(x, xp, fp, left=None, right=None, period=None):
    """np.interp as NumPy's C loop computes it, in float64: j the last sample point at or
    below x, the slope of (j, j + 1) from x - xp[j] (from xp[j + 1] if that gives NaN);
    fp[j] at a sample point and at the last one, ``left``/``right`` outside, NaN at NaN."""
    from .arithmetic import (absolute, add, equal, greater, less, logical_and, multiply,
                             remainder, subtract, true_divide, where)
    from .gather import take
    from .lifting import concatenate, constant, convert, lift_all
    from .math_functions import isnan
    from .shapes import slice_
    xv, xpv, fpv = lift_all(x, xp, fp)
    if xpv.ndim != 1 or fpv.ndim != 1:
        raise numpy_error(ValueError, "object too deep for desired array",
                          "np.interp takes 1-D xp and fp")
    if xpv.shape[0] != fpv.shape[0]:
        raise numpy_error(ValueError, "fp and xp are not of the same length.",
                          "pass as many values as sample points")
    if xpv.shape[0] == 0:
        raise numpy_error(ValueError, "array of sample points is empty",
                          "pass at least one sample point")
    f64 = dtypes.float64
    xv, xpv, fpv = convert(xv, f64), convert(xpv, f64), convert(fpv, f64)
    if period is not None:
        if period == 0:
            raise numpy_error(ValueError, "period must be a non-zero value",
                              "pass a non-zero period")
        period = absolute(convert(lift(period, xv._trace), f64))
        left = right = None
        xv = remainder(xv, period)
        xpv = remainder(xpv, period)
        order = argsort(xpv)
        xpv, fpv = take(xpv, order), take(fpv, order)
        m = xpv.shape[0]
        xpv = concatenate([subtract(slice_(xpv, [m - 1], [m], [1]), period), xpv,
                           add(slice_(xpv, [0], [1], [1]), period)], 0)
        fpv = concatenate([slice_(fpv, [m - 1], [m], [1]), fpv, slice_(fpv, [0], [1], [1])], 0)
    n = xpv.shape[0]
    lval = take(fpv, np.int64(0)) if left is None else convert(lift(left, xv._trace), f64)
    rval = take(fpv, np.int64(n - 1)) if right is None else convert(lift(right, xv._trace),
                                                                    f64)
    if n == 1:
        x0, f0 = take(xpv, np.int64(0)), take(fpv, np.int64(0))
        return where(less(xv, x0), lval, where(greater(xv, x0), rval, f0))
    j = subtract(searchsorted(xpv, xv, side="right"), np.int64(1))
    j = where(greater(xv, take(xpv, np.int64(n - 1))), np.int64(n), j)     # beyond xp[-1]
    jc = where(less(j, 0), np.int64(0), where(greater(j, n - 2), np.int64(n - 2), j))
    x_lo, x_hi = take(xpv, jc), take(xpv, add(jc, np.int64(1)))
    f_lo, f_hi = take(fpv, jc), take(fpv, add(jc, np.int64(1)))
    slope = true_divide(subtract(f_hi, f_lo), subtract(x_hi, x_lo))
    y = add(multiply(slope, subtract(xv, x_lo)), f_lo)
    y = where(isnan(y), add(multiply(slope, subtract(xv, x_hi)), f_hi), y)
    y = where(logical_and(isnan(y), equal(f_lo, f_hi)), f_lo, y)
    y = where(equal(x_lo, xv), f_lo, y)
    y = where(equal(j, np.int64(n - 1)), take(fpv, np.int64(n - 1)), y)
    y = where(less(j, 0), lval, where(equal(j, np.int64(n)), rval, y))
    # NumPy's search puts NaN last (beyond xp[-1]); its loop gives NaN for a NaN x
    return where(isnan(xv), xv, y)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """np.isin: each element compared with every test element (NaN is in nothing)."""
    from .arithmetic import equal, logical_not
    from .lifting import lift_all
    from .reductions import any as any_
    e, t = lift_all(element, test_elements)
    t = reshape(t, (1,) * e.ndim + (-1,))
    found = any_(equal(reshape(e, e.shape + (1,)), t), axis=-1)
    return logical_not(found) if invert else found
