"""Finding values in sorted or given arrays: np.searchsorted, np.digitize, np.interp, np.isin;
each a fixed number of gathers and comparisons (a binary search of log2(n) steps), so the
result's shape never depends on the data."""
from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ..errors import numpy_error
from .lifting import lift, reshape
from .sorting import argsort


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
    from .lifting import convert, lift_arrays
    from .rules import result_dtype
    from .shapes import full
    if side not in ("left", "right") and not (isinstance(side, str) and side[:1].lower()
                                               in ("l", "r")):
        raise numpy_error(ValueError, f"side must be 'left' or 'right' (got {side!r})",
                          "pass side='left' or side='right'")
    right = side[:1].lower() == "r"
    # NumPy compares in the common dtype of both as arrays (PyArray_DescrFromObject): a Python
    # number is not weak here, searchsorted(float32 a, 0.1) compares in float64
    xa, xv = lift_arrays(a, v)
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
    from .lifting import concatenate, convert, lift_all
    from .math_functions import isfinite, isnan, signbit
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
    # fp[j] at a sample point, written fp[j] + slope * (x - xp[j]) (x - xp[j] is 0), so that
    # its derivative in x is the segment's slope, as JAX's: fp[j] alone, a constant in x,
    # made the gradient 0 at every sample point (each x of a grid of xp)
    flat = where(isfinite(slope), slope, 0.0)     # (a repeated sample point)

    def at(f, xk):      # f + flat * 0, with f's zero sign kept: -0.0 + 0.0 would be 0.0
        up, down = (where(isnan(d), 0.0, d) for d in (subtract(xv, xk), subtract(xk, xv)))
        return where(signbit(flat), add(f, multiply(flat, up)),
                     subtract(f, multiply(flat, down)))
    y = where(equal(x_lo, xv), at(f_lo, x_lo), y)
    y = where(equal(j, np.int64(n - 1)), at(f_hi, x_hi), y)      # x is xp[-1], x_hi
    y = where(less(j, 0), lval, where(equal(j, np.int64(n)), rval, y))
    # NumPy's search puts NaN last (beyond xp[-1]); its loop gives NaN for a NaN x
    return where(isnan(xv), xv, y)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """np.isin: each element compared with every test element (NaN is in nothing)."""
    from .arithmetic import equal, logical_not
    from .lifting import lift_arrays
    from .reductions import any as any_
    e, t = lift_arrays(element, test_elements)      # (NumPy's np.asarray of each)
    t = reshape(t, (1,) * e.ndim + (-1,))
    found = any_(equal(reshape(e, e.shape + (1,)), t), axis=-1)
    return logical_not(found) if invert else found
