"""The NumPy attributes tracejit replaces while a user function is traced, and why.

NumPy hands tracejit only what it dispatches (``__array_ufunc__``, ``__array_function__``).
Two kinds of call never reach it, and plain NumPy code makes both:

- **Conversions of objects holding tracers**: ``np.array([a, b])``, ``np.asarray(t)``. NumPy
  dispatches these only given ``like=``; otherwise it converts in C and calls the tracer's
  ``__array__``, which can only refuse. The wrappers send them to conversion.py.
- **New arrays that will hold traced values**: ``out = np.zeros(n); out[i] = t`` (NPBench,
  cs231n's naive layers, min-char-rnn's one-hot ``xs[t][inputs[t]] = 1``). A NumPy array
  cannot hold a tracer, and NumPy never asks tracejit before writing into one. So
  ``np.zeros``, ``np.ones``, ``np.empty`` (zeros), ``np.full``, their ``_like`` forms,
  ``np.eye`` and ``np.identity`` give
  traced arrays, as ``jnp.zeros`` does under ``jax.jit`` and ``torch.zeros`` under
  ``torch.compile``: writes into them are traced writes (assignment.py). The price: Python
  control flow on their values (``if z[0] > 0``) meets a traced value, whose error names the
  line.
- ``np.r_`` and ``np.c_`` of traced items, which NumPy converts with its own ``array``.
- ``np.take`` of a NumPy array at traced indices: NumPy dispatches it on the array alone.
- ``scipy.special.logsumexp`` (when SciPy is imported): a Python function that converts its
  argument with ``np.asarray``; the user's calls on traced values get tracejit's, by the name
  they wrote (``tracejit.scipy.special.logsumexp`` is the same function for bound names).

Only the user's own calls are redirected: NumPy's, SciPy's and tracejit's own code (which call
``np.array`` and ``np.empty`` too) get NumPy's functions unchanged, as does every call outside
a trace. Compiled code called from the user's line has no Python frame of its own: NumPy's
random draws (``np.random.randn(3)``, ``rng.normal(size=3)``) call ``np.empty`` from C and
write into the result, so a traced array there crashed the process. A wrapper therefore asks
what the user's line is calling (``call_site.callee``): a call made by anything but the wrapper itself
gets NumPy's function, and a random draw is refused, since its numbers would be fixed at trace
time and every call would reuse them. The wrappers are module attributes for the duration of the outermost trace in the
process (a count, under a lock, since traces run on many threads); a name bound before
tracing (``from numpy import zeros``, ``from scipy.special import logsumexp``) reaches the
library's own function.
"""
from __future__ import annotations

import functools
import sys
import threading
from contextlib import contextmanager

import numpy as np

from .. import call_site
from ..errors import is_user_file, unsupported
from ..trace_state import current_trace
from ..tracer import LEN_CALLER_CHECKS, Tracer
from ..views import fresh, made_as_array
from . import conversion, gather, scipy_functions
from .lifting import constant
from .shapes import full

_lock = threading.Lock()
_active = 0
_originals: dict = {}


def _holds_tracer(obj) -> bool:
    if isinstance(obj, Tracer):
        return True
    if type(obj) in (list, tuple):
        return any(_holds_tracer(x) for x in obj)
    return False


def _from_user() -> bool:
    return is_user_file(sys._getframe(2).f_code.co_filename)


def _called_by_user(wrapper, unknown: bool = True) -> bool:
    """Whether the wrapper's caller is the user's own call of it (not compiled code that the
    user's line called); refuses a random draw (module docstring). ``unknown``: the answer
    where the user's line has no source to read it from (``python -c``, ``exec``)."""
    frame = sys._getframe(2)
    if not is_user_file(frame.f_code.co_filename):
        return False
    callee = call_site.callee(frame)
    if callee is call_site.UNKNOWN:
        return unknown
    if callee is wrapper:
        return True
    if isinstance(callee, str):
        return callee == wrapper.__name__
    _refuse_draw(callee)
    return False


def _refuse_draw(callee):
    if isinstance(getattr(callee, "__self__", None), (np.random.Generator,
                                                      np.random.RandomState)):
        name = getattr(callee, "__name__", "a draw")
        raise unsupported(
            f"a NumPy random draw ({name}), whose numbers would be drawn once, while "
            "tracing, and reused by every call",
            "pass a key as an argument and draw from it with tracejit.random (JAX's API: "
            "key = tracejit.random.PRNGKey(0); key, sub = tracejit.random.split(key); "
            "tracejit.random.normal(sub, shape)), new numbers each call without retracing; "
            "or draw the numbers outside the jitted function and pass them in")


def refuse_random_caller(frame):
    """``np.random.shuffle(t)`` of a tracer asks its ``len()`` from compiled code, whose
    caller is the user's line: refused as a draw, or its permutation would be fixed while
    tracing (NumPy only warns that a Tracer is not a Sequence)."""
    if is_user_file(frame.f_code.co_filename):
        callee = call_site.callee(frame)
        if callee is not call_site.UNKNOWN and not isinstance(callee, str):
            _refuse_draw(callee)


LEN_CALLER_CHECKS.append(refuse_random_caller)


def _converting(original, ours):
    @functools.wraps(original)
    def wrapper(obj, *args, **kwargs):
        if kwargs.get("like") is None and _holds_tracer(obj) and _called_by_user(wrapper):
            kwargs.pop("like", None)
            return ours(obj, *args, **kwargs)
        return original(obj, *args, **kwargs)
    wrapper.__tracejit_original__ = original
    return wrapper


def _taking(original):
    """``np.take(a, indices)`` of a NumPy array at traced indices: NumPy dispatches np.take
    on ``a`` (and ``out``) alone, so it converted the indices with their ``__array__``."""
    @functools.wraps(original)
    def wrapper(a, indices, *args, **kwargs):
        if (not _holds_tracer(a) and _holds_tracer(indices) and "out" not in kwargs
                and len(args) < 2 and _called_by_user(wrapper)):
            return gather.take(a, indices, *args, **kwargs)
        return original(a, indices, *args, **kwargs)
    wrapper.__tracejit_original__ = original
    return wrapper


def _creating(original):
    """``original`` (np.zeros, ...) giving a traced array when the user calls it in a trace:
    NumPy's own result says the shape, dtype and value (and raises NumPy's errors)."""
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        trace = current_trace()
        # Without the user's source, NumPy's array: C code (a random draw's np.empty) may be
        # the caller, and writing into a traced array crashed the process
        if (trace is None or kwargs.get("like") is not None
                or not _called_by_user(wrapper, unknown=False)):
            return original(*args, **kwargs)
        return made_as_array(made(*args, **kwargs))

    def made(*args, **kwargs):
        trace = current_trace()
        if original is _NUMPY["full"] and _holds_tracer(args[1:2] or kwargs.get("fill_value")):
            shape = args[0] if args else kwargs["shape"]
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            value = args[1] if len(args) > 1 else kwargs["fill_value"]
            dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
            return fresh(full(shape, value, dtype, trace))
        arr = original(*args, **kwargs)
        if type(arr) is not np.ndarray:
            return arr                  # a tracer's zeros_like, dispatched by NumPy
        flat = arr.reshape(-1)
        if flat.size and ((flat == flat[0]).all() or arr.dtype.kind == "f"
                          and np.isnan(flat).all()):
            # one value: a broadcast scalar in the IR, not an array constant
            return fresh(full(arr.shape, flat[0].copy(), trace=trace))
        return constant(arr, trace=trace)
    wrapper.__tracejit_original__ = original
    return wrapper


class _Concatenator:
    """``np.r_`` / ``np.c_`` on traced items (numpy-ml's ``np.c_[np.ones(n), X]``): NumPy's
    convert each item with an ``array`` bound inside NumPy, which cannot trace. Arrays and
    numbers only; slices and string directives go to NumPy's (which refuses tracers)."""

    def __init__(self, original, axis: int, ndmin: int):
        self.original, self.axis, self.ndmin = original, axis, ndmin

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if (current_trace() is None or not any(_holds_tracer(i) for i in items)
                or any(isinstance(i, (slice, str)) for i in items) or not _from_user()):
            return self.original[key]
        arrays = []
        for item in items:
            x = conversion.asarray(item)
            if x.ndim < self.ndmin:       # c_: a vector is a column, a number a 1x1
                x = x.reshape((-1, 1) if x.ndim == 1 else (1,) * self.ndmin)
            arrays.append(x)
        return np.concatenate(arrays, axis=self.axis)

    def __len__(self):
        return len(self.original)


_NUMPY = {name: getattr(np, name) for name in (
    "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray",
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "eye", "identity", "r_", "c_", "take")}


def _wrappers() -> dict:
    out = {"array": _converting(_NUMPY["array"], conversion.array),
           "asarray": _converting(_NUMPY["asarray"], conversion.asarray),
           "asanyarray": _converting(_NUMPY["asanyarray"], conversion.asarray),
           "ascontiguousarray": _converting(_NUMPY["ascontiguousarray"],
                                            conversion.ascontiguousarray),
           "asfortranarray": _converting(_NUMPY["asfortranarray"], conversion.asfortranarray)}
    for name in ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                 "full_like", "eye", "identity"):
        out[name] = _creating(_NUMPY[name])
    out["take"] = _taking(_NUMPY["take"])
    out["r_"] = _Concatenator(_NUMPY["r_"], 0, 1)
    out["c_"] = _Concatenator(_NUMPY["c_"], -1, 2)
    return out


def _scipy_logsumexp(original):
    """scipy.special.logsumexp (a Python function that np.asarray's its argument) on traced
    values from the user's code: scipy_functions' version, SciPy's steps on tracers."""
    @functools.wraps(original)
    def wrapper(a, axis=None, b=None, keepdims=False, return_sign=False):
        if (_holds_tracer(a) or _holds_tracer(b)) and _from_user():
            return scipy_functions.logsumexp(a, axis, b, keepdims, return_sign)
        return original(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    wrapper.__tracejit_original__ = original
    return wrapper


def _scipy_targets() -> list:
    """(module, name, wrapper) for the SciPy functions replaced, if SciPy is imported (code
    that calls it has imported it before its function is traced)."""
    special = sys.modules.get("scipy.special")
    if special is None or not hasattr(special, "logsumexp"):
        return []
    return [(special, "logsumexp", _scipy_logsumexp(special.logsumexp))]


@contextmanager
def numpy_sees_tracers():
    """While a user function is traced: NumPy's conversions and array creations as the module
    docstring says."""
    global _active
    with _lock:
        if _active == 0:
            targets = [(np, name, w) for name, w in _wrappers().items()] + _scipy_targets()
            for module, name, wrapper in targets:
                _originals[module, name] = getattr(module, name)
                setattr(module, name, wrapper)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                for module, name in list(_originals):
                    setattr(module, name, _originals.pop((module, name)))
