"""Running reductions along an axis beyond cumsum and cumprod (reductions.py): running extrema
(np.maximum.accumulate, np.minimum.accumulate) and the array-API cumulative sums and products
(np.cumulative_sum, np.cumulative_prod with ``include_initial``)."""
from __future__ import annotations

import numpy as np

from ..errors import numpy_error
from .arithmetic import maximum, minimum
from .lifting import concatenate, convert, lift
from .reductions import cumprod, cumsum
from .rules import normalize_axis, requested_dtype
from .shapes import full, slice_


def _running(pick, x, axis, dtype):
    """Running maximum or minimum along ``axis``: log2(n) steps, each combining every element
    with the one ``k`` before it (the first ``k`` with themselves: max and min are idempotent);
    NaN propagates onward, as NumPy's."""
    x = lift(x)
    if dtype is not None:
        x = convert(x, requested_dtype(dtype))
    if x.ndim == 0:
        raise numpy_error(ValueError, "cannot accumulate on a scalar", "pass an array")
    axis = normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    k = 1
    ones = [1] * x.ndim
    while k < n:
        lo, hi = [0] * x.ndim, list(x.shape)
        hi[axis] = k
        head = slice_(x, lo, hi, ones)
        hi[axis] = n - k
        before = slice_(x, lo, hi, ones)
        x = pick(x, concatenate([head, before], axis))
        k *= 2
    return x


def cummax(x, axis=0, dtype=None):
    return _running(maximum, x, axis, dtype)


def cummin(x, axis=0, dtype=None):
    return _running(minimum, x, axis, dtype)


def _cumulative(f, identity):
    """np.cumulative_sum / np.cumulative_prod (NumPy 2.1): cumsum/cumprod with an axis
    required beyond 1-D and ``include_initial`` (the identity first)."""
    def g(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        x = lift(x)
        if axis is None:
            if x.ndim != 1:
                raise numpy_error(ValueError, "For arrays which have more than one dimension "
                                  "``axis`` argument is required.", "pass axis=")
            axis = 0
        out = f(x, axis, dtype)
        if include_initial:
            axis = normalize_axis(axis, out.ndim)
            shape = [1 if i == axis else n for i, n in enumerate(out.shape)]
            out = concatenate([full(shape, np.asarray(identity, out.dtype), trace=out._trace),
                               out], axis)
        return out
    return g


cumulative_sum = _cumulative(cumsum, 0)
cumulative_prod = _cumulative(cumprod, 1)
