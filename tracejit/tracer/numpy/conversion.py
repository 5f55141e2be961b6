"""np.array, np.asarray and their kin on traced values: ``np.array([a, b])``, ``np.asarray(t)``.

NumPy dispatches these to ``__array_function__`` only when given ``like=``; patches.py sends
the user's other calls on objects holding tracers here while a function is traced.
"""
from __future__ import annotations

from ..errors import numpy_error
from ..tracer import Tracer
from .lifting import astype, lift, reshape
from .rules import dt, requested_dtype


def _convert(obj, dtype, copy, ndmin=0) -> Tracer:
    x = lift(obj)
    made = x is not obj             # a list, a NumPy array or a number: a new array
    if dtype is not None and requested_dtype(dtype) != dt(x):
        x, made = astype(x, dtype), True
    if copy is False and made:
        raise numpy_error(ValueError, "Unable to avoid copy while creating an array as "
                          "requested.", "pass copy=None to copy only when needed")
    if copy and not made:
        x = x.copy()                # a new array: writes into it do not reach obj
    if ndmin > x.ndim:
        x = reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
    return x


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0):
    return _convert(object, dtype, copy, ndmin)


def asarray(a, dtype=None, order=None, *, device=None, copy=None):
    return _convert(a, dtype, copy)


def ascontiguousarray(a, dtype=None):
    return _convert(a, dtype, None)
