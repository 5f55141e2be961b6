"""Covariance and correlation: np.cov, np.corrcoef, np.convolve, np.correlate, from
products, sums and shifted slices (at least float64, as in NumPy)."""
from __future__ import annotations

import numpy as np

from ...ir import dtypes
from ..errors import numpy_error, unsupported
from .arithmetic import subtract
from .lifting import convert, lift, lift_all, lift_arrays, reshape
from .linalg import diagonal, matmul
from .math_functions import sqrt
from .rules import result_dtype
from .shapes import transpose


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """np.cov without weights: float64 at least, as NumPy computes it."""
    from .arithmetic import true_divide
    from .lifting import concatenate
    from .reductions import mean
    if fweights is not None or aweights is not None:
        raise unsupported("np.cov with fweights or aweights", "compute the weighted "
                          "covariance with NumPy functions, or open an issue")
    x = lift(m)
    if x.ndim > 2:
        raise numpy_error(ValueError, "m has more than 2 dimensions", "pass a 1-D or 2-D array")
    d = dtypes.as_dtype(np.result_type(x.dtype, np.float64) if dtype is None else dtype)
    x = convert(reshape(x, (1, -1)) if x.ndim < 2 else x, d)
    if not rowvar and x.shape[0] != 1:
        x = transpose(x, [1, 0])
    if y is not None:
        yy = lift(y, x._trace)
        if yy.ndim > 2:
            raise numpy_error(ValueError, "y has more than 2 dimensions",
                              "pass a 1-D or 2-D array")
        yy = convert(reshape(yy, (1, -1)) if yy.ndim < 2 else yy, d)
        if not rowvar and yy.shape[0] != 1:
            yy = transpose(yy, [1, 0])
        x = concatenate([x, yy], 0)
    if ddof is None:
        ddof = 0 if bias else 1
    fact = max(x.shape[1] - ddof, 0)
    xc = subtract(x, mean(x, axis=1, keepdims=True))
    c = true_divide(matmul(xc, transpose(xc, [1, 0])), np.asarray(fact, d.np))
    return reshape(c, [n for n in c.shape if n != 1])       # NumPy squeezes


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    from .arithmetic import clip, true_divide
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return true_divide(c, c)
    std = sqrt(diagonal(c))
    c = true_divide(true_divide(c, reshape(std, (-1, 1))), reshape(std, (1, -1)))
    return clip(c, -1, 1)


def convolve(a, v, mode="full"):
    """np.convolve of 1-D arrays: the windows of ``a`` (padded for "full" and "same") times
    ``v`` reversed, so the gradient is the window op's."""
    from .gather import sliding_window_view
    from .padding import pad
    from .shapes import flip
    x, k = lift_arrays(a, v)       # np.array of each: a Python number is not weak
    if x.ndim > 1 or k.ndim > 1:
        raise numpy_error(ValueError, "object too deep for desired array",
                          "np.convolve takes 1-D arrays")
    x, k = reshape(x, (-1,)), reshape(k, (-1,))
    if x.shape[0] == 0 or k.shape[0] == 0:
        raise numpy_error(ValueError, f"{'a' if x.shape[0] == 0 else 'v'} cannot be empty",
                          "pass non-empty arrays")
    if k.shape[0] > x.shape[0]:
        x, k = k, x
    w = k.shape[0]
    if mode in ("full", 2):
        lo, hi = w - 1, w - 1
    elif mode in ("same", 1):       # NumPy's: the full result from index (w - 1) // 2
        hi = (w - 1) // 2
        lo = w - 1 - hi
    elif mode in ("valid", 0):
        lo = hi = 0
    else:
        raise numpy_error(ValueError, f"mode must be one of 'valid', 'same', or 'full' "
                          f"(got {mode!r})", "pass one of them")
    if lo or hi:
        x = pad(x, [(lo, hi)])
    d = result_dtype(x, k)
    return matmul(convert(sliding_window_view(x, w), d), convert(flip(k, 0), d))


def correlate(a, v, mode="valid"):
    """np.correlate of 1-D (real) arrays: the convolution with ``v`` reversed."""
    from .shapes import flip
    x, k = lift_all(a, v)
    if x.ndim > 1 or k.ndim > 1:
        raise numpy_error(ValueError, "object too deep for desired array",
                          "np.correlate takes 1-D arrays")
    return convolve(x, flip(reshape(k, (-1,)), 0), mode)
