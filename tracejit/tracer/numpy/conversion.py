"""np.array, np.asarray and their kin on traced values: ``np.array([a, b])``, ``np.asarray(t)``.

NumPy dispatches these to ``__array_function__`` only when given ``like=``; otherwise it converts
the object itself, in C, and would call the tracer's ``__array__``, which can only refuse. So
while a user function is being traced, ``numpy_array_sees_tracers`` puts wrappers at
``np.array``, ``np.asarray``, ``np.asanyarray`` and ``np.ascontiguousarray`` that send an object
holding a tracer (a tracer, or lists and tuples with one inside) here and everything else to
NumPy's own function unchanged (as are calls from NumPy's, SciPy's and tracejit's own code,
where a traced value must not go on: NumPy's refusal names what to call instead). The wrappers are module attributes for the duration of the
outermost trace in the process (a count, under a lock, because traces run on many threads);
a name bound before tracing (``from numpy import array``) still reaches NumPy's, whose refusal
says so. This is the one place tracejit replaces a NumPy attribute: JAX refuses
``np.array([tracer])`` and asks for ``jnp.array``; tracejit's promise is unchanged NumPy code.
"""
from __future__ import annotations

import functools
import sys
import threading
from contextlib import contextmanager

import numpy as np

from ..errors import is_user_file, numpy_error
from ..tracer import Tracer
from .lifting import astype, lift, reshape
from .rules import dt, requested_dtype

_PATCHED = ("array", "asarray", "asanyarray", "ascontiguousarray")
_lock = threading.Lock()
_active = 0
_originals: dict = {}


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


def _holds_tracer(obj) -> bool:
    if isinstance(obj, Tracer):
        return True
    if type(obj) in (list, tuple):
        return any(_holds_tracer(x) for x in obj)
    return False


def _sees_tracers(original, ours):
    @functools.wraps(original)
    def wrapper(obj, *args, **kwargs):
        # Only the user's own calls: NumPy's and SciPy's Python code converts with np.array
        # too (as_strided, logsumexp), and a traced value must not go on into their code,
        # which NumPy's refusal prevents (naming what to call instead)
        if kwargs.get("like") is None and _holds_tracer(obj) \
                and is_user_file(sys._getframe(1).f_code.co_filename):
            kwargs.pop("like", None)
            return ours(obj, *args, **kwargs)
        return original(obj, *args, **kwargs)
    wrapper.__tracejit_original__ = original
    return wrapper


@contextmanager
def numpy_array_sees_tracers():
    """While a user function is traced: ``np.array(obj)`` of an object holding a tracer
    traces (the module docstring says why and how)."""
    global _active
    with _lock:
        if _active == 0:
            ours = {"array": array, "asarray": asarray, "asanyarray": asarray,
                    "ascontiguousarray": ascontiguousarray}
            for name in _PATCHED:
                _originals[name] = getattr(np, name)
                setattr(np, name, _sees_tracers(_originals[name], ours[name]))
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                for name in _PATCHED:
                    setattr(np, name, _originals.pop(name))
