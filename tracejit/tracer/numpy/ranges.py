"""Evenly spaced values with traced endpoints: np.linspace."""
from __future__ import annotations

import numpy as np

from ..errors import numpy_error, unsupported
from .arithmetic import add, equal, multiply, subtract, true_divide, where
from .lifting import astype, broadcast_to, convert, lift_all
from .math_functions import floor
from .rules import float_result
from .shapes import iota


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """np.linspace with traced endpoints (scalars): iota * step + start, the last element
    ``stop`` itself when ``endpoint``, as NumPy's."""
    start, stop = lift_all(start, stop)
    if start.ndim or stop.ndim or axis != 0:
        raise unsupported("np.linspace with array endpoints or an axis",
                          "use scalar endpoints, or build it from np.arange")
    num = int(num)
    if num < 0:
        raise numpy_error(ValueError, f"Number of samples, {num}, must be non-negative.",
                          "pass num >= 0")
    ft = float_result(start, stop)
    start, stop = convert(start, ft), convert(stop, ft)
    div = (num - 1) if endpoint else num
    step = true_divide(subtract(stop, start), max(div, 1))
    i = iota((num,), 0, trace=start._trace)
    y = add(multiply(convert(i, ft), step), start)
    if endpoint and num > 1:
        y = where(equal(i, np.int64(num - 1)), broadcast_to(stop, (num,)), y)
    if dtype is not None:
        if np.issubdtype(np.dtype(dtype), np.integer):
            y = floor(y)                # NumPy 2 floors before an integer cast
        y = astype(y, dtype)
    return (y, step) if retstep else y
