"""Argument checks and conversions shared by the nn functions: errors that name the user's
line, PyTorch's image layouts and int-or-pair sizes, Python numbers in an array's dtype."""
from __future__ import annotations

import numpy as np

from ..tracer.errors import caller_location, numpy_error


def _error(what: str, hint: str = "", exc_type: type = ValueError) -> Exception:
    """A mistake in the arguments of an nn function, naming the user's line that called it
    (not this module's)."""
    return numpy_error(exc_type, what, hint, loc=caller_location())


def _images(input, name: str):
    """PyTorch's image layouts: (N, C, H, W), or one image (C, H, W), which gets a batch axis
    of one. Returns the 4-D input and whether it was one image."""
    ndim = np.ndim(input)
    if ndim not in (3, 4):
        raise _error(f"{name}: expected a 3-D (unbatched) or 4-D (batched) input, but got an "
                     f"input of shape {tuple(np.shape(input))}",
                     "images are (N, C, H, W), or (C, H, W) for one image; give grayscale "
                     "images of shape (N, H, W) a channel axis with x[:, None]")
    return (input[None], True) if ndim == 3 else (input, False)


def _pair(v) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, (int, np.integer)) else tuple(int(a) for a in v)


def _float(x, value):
    """A Python number as a 0-d array of x's dtype (keeps float32 math in float32)."""
    return np.asarray(value, dtype=x.dtype)
