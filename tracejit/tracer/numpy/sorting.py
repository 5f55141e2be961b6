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
