"""np.array, np.asarray and their kin on traced values: ``np.array([a, b])``, ``np.asarray(t)``.

NumPy dispatches these to ``__array_function__`` only when given ``like=``; patches.py sends
the user's other calls on objects holding tracers here while a function is traced.
"""
from __future__ import annotations

from ..errors import numpy_error
from ..tracer import Tracer
from ..views import in_order, made_as_array, set_order
from .lifting import astype, lift, reshape
from .rules import dt, requested_dtype


def _convert(obj, dtype, copy, ndmin=0, order=None) -> Tracer:
    """``order``: the memory order asked for ("C", "F", "A", "K"/None), as NumPy's: an array
    not laid out so is copied (so that writes into the result do not reach ``obj``)."""
    x = lift(obj)
    made = x is not obj             # a list, a NumPy array or a number: a new array
    if x._weak:                     # a traced Python number too, an array of NumPy's dtype
        x, made = Tracer(x._value, x._trace, False), True
    if dtype is not None and requested_dtype(dtype) != dt(x):
        x, made = astype(x, dtype), True
    want = _order(x, order) if not made else None
    if copy is False and (made or (want is not None and not in_order(x, want))):
        raise numpy_error(ValueError, "Unable to avoid copy while creating an array as "
                          "requested.", "pass copy=None to copy only when needed")
    if (copy or (want is not None and not in_order(x, want))) and not made:
        layout = want or _memory_order(x)
        x = x.copy()                # a new array: writes into it do not reach obj
        set_order(x, layout)
    elif made and order in ("F", "f"):
        set_order(x, "F")
    if ndmin > x.ndim:
        x = reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
    return made_as_array(x) if x is not obj else x


def _order(x, order):
    """The order ("C", "F") that ``x`` must be in, or None when any will do ("K")."""
    order = (order or "K").upper()
    if order == "A":
        return _memory_order(x)
    return order if order in ("C", "F") else None


def _memory_order(x) -> str:
    """"F" for an array laid out in Fortran order only, else "C"."""
    return "F" if in_order(x, "F") and not in_order(x, "C") else "C"


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0):
    return _convert(object, dtype, copy, ndmin, order)


def asarray(a, dtype=None, order=None, *, device=None, copy=None):
    return _convert(a, dtype, copy, order=order)


def ascontiguousarray(a, dtype=None):
    return _convert(a, dtype, None, ndmin=1, order="C")


def asfortranarray(a, dtype=None):
    return _convert(a, dtype, None, ndmin=1, order="F")
