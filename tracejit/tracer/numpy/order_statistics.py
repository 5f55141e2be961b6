"""Order statistics: np.median, np.quantile, np.percentile and their NaN-ignoring forms
(nanmedian, nanquantile, nanpercentile), from a sort along the last axis (sorting.py), with
NumPy's linear interpolation, dtypes and NaN rules."""
from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ..errors import numpy_error
from .lifting import lift, reshape
from .sorting import along_last_axis, sort


def _checked_q(name, q, method, fraction):
    """(q, whether it is traced, q's fractions as NumPy values or None), with NumPy's errors
    for another method or a q out of range."""
    from .gather import constant_value
    if method != "linear":
        raise numpy_error(ValueError, f"{name}: only method='linear' is supported under "
                          f"tracing, got {method!r}", "drop method=")
    if hasattr(q, "_trace") and constant_value(q) is not None:
        q = constant_value(q)
    if hasattr(q, "_trace"):
        return q, True, None
    qs = np.asarray(q, dtype=np.float64) * fraction
    if qs.size and not ((qs >= 0) & (qs <= 1)).all():
        raise numpy_error(ValueError, f"{name}: q must be in the range [0, {1 / fraction:g}]",
                          "pass q within the range")
    return q, False, qs


def _result_dtype(numpy_function, x, q, traced_q):
    """NumPy's own result dtype, from a one-element array of ``x``'s dtype (float64 for an
    array q, the input's float dtype for a Python-float q, a traced argument too)."""
    from .rules import constant_dtype
    if traced_q:        # a weak (Python number) q probes as a Python number
        q = np.zeros(q.shape, q.dtype).item() if q._weak else np.zeros(q.shape, q.dtype)
    probe = numpy_function(np.zeros(1, x.dtype), q)
    return constant_dtype(np.result_type(probe))


def _order_statistic(name, a, q, axis, keepdims, method, fraction):
    """The linear interpolation between the sorted values at ``q * (n - 1)`` (NumPy's
    default method), with NaN where a reduced slice holds one, as NumPy gives."""
    from .arithmetic import add, multiply, subtract, where
    from .gather import take
    from .lifting import constant, convert
    from .math_functions import isnan
    from .reductions import any as any_
    from .rules import dt
    q, traced_q, qs = _checked_q(name, q, method, fraction)
    x, kept_shape = along_last_axis(a, axis)
    # the result's dtype: NumPy's own on a one-element array of the input's dtype
    d = _result_dtype(np.quantile if fraction == 1.0 else np.percentile, lift(a), q, traced_q)
    n = x.shape[-1]
    if n == 0:
        raise numpy_error(IndexError, f"{name} of an empty array", "reduce a non-empty array")
    s = sort(x, axis=-1)
    if not dt(s).is_float:
        s = convert(s, d)
    if traced_q:
        # (a q out of range, which NumPy refuses, is clamped: its value is not known here)
        from .arithmetic import clip, minimum
        from .math_functions import floor
        qs = lift(q, x._trace)
        pos = multiply(reshape(convert(qs, dtypes.float64), (-1,)), fraction * (n - 1))
        lo = clip(convert(floor(pos), dtypes.int64), 0, n - 1)
        hi = minimum(add(lo, 1), n - 1)
        t = clip(subtract(pos, convert(lo, dtypes.float64)), 0, 1)
    else:
        pos = qs.reshape(-1) * (n - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        t = pos - lo
    out = lerp(take(s, lo, axis=-1), take(s, hi, axis=-1), t, d)
    if dt(x).is_float:
        nan = constant(np.array(np.nan, d.np), trace=x._trace)
        out = where(reshape(any_(isnan(x), axis=-1), x.shape[:-1] + (1,)), nan, out)
    # (..., q) -> q's axes first, then the kept axes
    from .shapes import transpose
    out = transpose(out, [out.ndim - 1] + list(range(out.ndim - 1)))
    rest = kept_shape if keepdims else x.shape[:-1]
    return reshape(out, qs.shape + tuple(rest))


def lerp(a, b, t, d):
    """NumPy's ``_lerp``: ``b - (b - a) (1 - t)`` where ``t >= 0.5``, else ``a + (b - a) t``,
    with ``b - a`` in the values' own dtype and the rest in the result's ``d`` (float64 for
    an array q; a Python-float q is weak, so float32 values stay float32), ``t`` and
    ``1 - t`` rounded to ``d`` from float64 (``t``: a float64 tracer or NumPy array)."""
    from .arithmetic import add, greater_equal, multiply, subtract, where
    from .lifting import constant, convert
    diff = convert(subtract(b, a), d)
    a, b = convert(a, d), convert(b, d)
    if hasattr(t, "_trace"):
        t_d, rest = convert(t, d), convert(subtract(1.0, t), d)
        upper = greater_equal(t, 0.5)
    else:
        tr = a._trace
        t_d = constant(np.asarray(t).astype(d.np), trace=tr)
        rest = constant((1.0 - np.asarray(t)).astype(d.np), trace=tr)
        upper = constant(np.asarray(t) >= 0.5, trace=tr)
    return where(upper, subtract(b, multiply(diff, rest)), add(a, multiply(diff, t_d)))




def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """np.median: the mean of the middle one or two sorted values (NaN where a slice holds
    one); NumPy's dtypes (float64 for integers)."""
    from .arithmetic import where
    from .gather import take
    from .lifting import constant
    from .math_functions import isnan
    from .reductions import any as any_, mean
    from .rules import dt
    x, kept_shape = along_last_axis(a, axis)
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
    x, kept_shape = along_last_axis(a, axis)
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
    from .arithmetic import equal, floor_divide, remainder, subtract, where
    from .lifting import concatenate, constant
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
    from .arithmetic import add, clip, equal, minimum, multiply, subtract, where
    from .lifting import constant, convert
    from .math_functions import floor
    from .rules import dt
    q, traced_q, qs = _checked_q(name, q, method, fraction)
    x0 = lift(a)
    d = _result_dtype(np.nanquantile if fraction == 1.0 else np.nanpercentile, x0, q, traced_q)
    if not dt(x0).is_float:
        return _order_statistic(name, a, q, axis, keepdims, method, fraction)
    x, s, c, kept_shape = _sorted_with_counts(a, axis)
    rest = kept_shape if keepdims else x.shape[:-1]
    if x0.size == 0:        # NumPy returns np.nanmean of the empty array: no axis for q
        return constant(np.full(rest, np.nan, d.np), trace=x._trace)
    if traced_q:            # (a q out of range, which NumPy refuses, is clamped)
        qv = clip(multiply(reshape(convert(lift(q, x._trace), dtypes.float64), (-1,)),
                           fraction), 0.0, 1.0)
    else:
        qv = constant(qs.reshape(-1).astype(np.float64), trace=x._trace)   # (k,)
    pos = multiply(qv, convert(subtract(c, np.int64(1)), dtypes.float64))   # (..., k)
    lo_i = clip(convert(floor(pos), dtypes.int64), np.int64(0), None)
    hi_i = minimum(add(lo_i, np.int64(1)), subtract(c, np.int64(1)))
    t = subtract(pos, convert(lo_i, dtypes.float64))
    out = lerp(_at(s, lo_i), _at(s, hi_i), t, d)
    out = where(equal(c, np.int64(0)), constant(np.array(np.nan, d.np), trace=x._trace), out)
    from .shapes import transpose
    out = transpose(out, [out.ndim - 1] + list(range(out.ndim - 1)))
    return reshape(out, tuple(q.shape if traced_q else qs.shape) + tuple(rest))


def _quantile_function(name: str, statistic, fraction: float):
    """np.quantile and its kin: NumPy's signature around ``statistic`` (``fraction``: 0.01
    for percentiles)."""
    def function(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                 keepdims=False, *, weights=None, interpolation=None):
        if weights is not None or interpolation is not None:
            raise numpy_error(TypeError, f"np.{name}: weights= and interpolation= are not "
                              "supported under tracing", "drop them")
        return statistic(f"np.{name}", a, q, axis, keepdims, method, fraction)
    function.__name__ = function.__qualname__ = name
    return function


quantile = _quantile_function("quantile", _order_statistic, 1.0)
percentile = _quantile_function("percentile", _order_statistic, 0.01)
nanquantile = _quantile_function("nanquantile", _nan_order_statistic, 1.0)
nanpercentile = _quantile_function("nanpercentile", _nan_order_statistic, 0.01)
