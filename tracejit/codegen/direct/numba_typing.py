"""Types of the kernel language, asked of Numba's typing context: the operand types an
operator converts to and its result's, unification where two values meet, and the types of
constants. Asking Numba (rather than restating its rules) keeps a directly compiled kernel's
arithmetic the same as Numba's on the same source."""
from __future__ import annotations

import numpy as np
from numba import types
from numba.np.numpy_support import from_dtype

from .values import Unsupported

_typing = None
_resolved: dict = {}


def typing_context():
    global _typing
    if _typing is None:
        from numba.core.registry import cpu_target
        tc = cpu_target.typing_context
        tc.refresh()
        _typing = tc
    return _typing


def resolve(fn, argtypes: tuple):
    """Numba's signature for ``fn`` on ``argtypes`` (operand types to convert to, and the
    result's), or Unsupported."""
    key = (fn, argtypes)
    if key not in _resolved:
        try:
            _resolved[key] = typing_context().resolve_function_type(fn, argtypes, {})
        except Exception:                    # noqa: BLE001 (Numba's typing errors vary)
            _resolved[key] = None
    sig = _resolved[key]
    if sig is None:
        raise Unsupported(f"no typing of {getattr(fn, '__name__', fn)}{argtypes}")
    return sig


def unify(a, b):
    if a == b:
        return a
    u = typing_context().unify_types(a, b)
    if u is None:
        raise Unsupported(f"cannot unify {a} and {b}")
    return u


def typeof_constant(x):
    if isinstance(x, (bool, np.bool_)):
        return types.boolean
    if isinstance(x, int):
        return types.int64 if -2**63 <= x < 2**63 else types.uint64
    if isinstance(x, float):
        return types.float64
    if isinstance(x, np.generic):
        return from_dtype(x.dtype)
    if isinstance(x, tuple) and x:
        return types.BaseTuple.from_types([typeof_constant(e) for e in x])
    raise Unsupported(f"constant {x!r}")


