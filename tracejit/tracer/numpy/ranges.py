"""Evenly spaced values with traced endpoints: np.linspace, np.logspace, np.geomspace."""
from __future__ import annotations

import numpy as np

from ..errors import numpy_error, unsupported
from .arithmetic import add, equal, less, multiply, subtract, true_divide, where
from .lifting import astype, broadcast_to, convert, lift_all
from .math_functions import floor
from .rules import broadcast_shapes, float_result
from .shapes import iota, moveaxis

AxisError = np.exceptions.AxisError


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """np.linspace with traced endpoints (scalars): iota * step + start, the last element
    ``stop`` itself when ``endpoint``, as NumPy's."""
    start, stop = lift_all(start, stop)
    num = int(num)
    if num < 0:
        raise numpy_error(ValueError, f"Number of samples, {num}, must be non-negative.",
                          "pass num >= 0")
    ft = float_result(start, stop)
    start, stop = convert(start, ft), convert(stop, ft)
    div = (num - 1) if endpoint else num
    # array endpoints: the samples run along a new first axis, moved to ``axis`` at the end
    shape = broadcast_shapes(start.shape, stop.shape)
    start, stop = broadcast_to(start, shape), broadcast_to(stop, shape)
    step = true_divide(subtract(stop, start), max(div, 1))
    full = (num,) + tuple(shape)
    i = iota(full, 0, trace=start._trace)
    y = add(multiply(convert(i, ft), broadcast_to(step, full)), broadcast_to(start, full))
    if endpoint and num > 1:
        y = where(equal(i, np.int64(num - 1)), broadcast_to(stop, full), y)
    if shape:
        y = moveaxis(y, 0, axis)
    elif axis not in (0, -1):
        raise numpy_error(AxisError, f"axis {axis} is out of bounds for array of dimension 1",
                          "pass axis=0")
    if dtype is not None:
        if np.issubdtype(np.dtype(dtype), np.integer):
            y = floor(y)                # NumPy 2 floors before an integer cast
        y = astype(y, dtype)
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop): NumPy's formula."""
    from .arithmetic import power
    y = linspace(start, stop, num, endpoint, axis=axis)
    if np.ndim(base) if not hasattr(base, "_trace") else base.ndim:
        raise unsupported("np.logspace with an array base", "pass a scalar base")
    y = power(base, y)
    return y if dtype is None else astype(y, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's: the sign of ``start`` times base-10 logspace of the magnitudes, the endpoints
    set to ``start`` and ``stop`` exactly. A zero endpoint is NumPy's ValueError only when
    the values are known; traced, it gives NaN/inf entries."""
    from .arithmetic import absolute
    from .math_functions import log10
    start, stop = lift_all(start, stop)
    ft = float_result(start, stop)
    start, stop = convert(start, ft), convert(stop, ft)
    sign = where(less(start, 0), np.asarray(-1, ft.np), np.asarray(1, ft.np))
    y = logspace(log10(absolute(start)), log10(absolute(stop)), num, endpoint, axis=0)
    y = multiply(y, sign)
    if num > 0:
        i = iota(y.shape, 0, trace=y._trace)
        y = where(equal(i, 0), broadcast_to(start, y.shape), y)
        if endpoint and num > 1:
            y = where(equal(i, np.int64(num - 1)), broadcast_to(stop, y.shape), y)
    if y.ndim > 1:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        y = astype(y, dtype)
    return y
