"""Finding tracers left in the caller's objects when a trace ends.

A jitted function that stores a traced value into a container it was given
(``state["m"] = x.mean()``, an attribute of ``self``) would leave a Tracer in the caller's
object, and the mistake would surface only at a later use, far from its cause. At the end of
each trace the caller's arguments are walked (containers and plain objects' attributes, not
arrays) and such a tracer is an error naming where it was stored and the line that made it.
"""
from __future__ import annotations

import types

import numpy as np

from .errors import EscapedTracerError
from .tracer import Tracer

_MAX_DEPTH = 8
_OPAQUE = (np.ndarray, np.generic, str, bytes, int, float, complex, bool, type(None), type,
           types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def check_no_leaks(trace, roots):
    """Raise if any object reachable from ``roots`` ((name, object) pairs, the caller's own
    arguments) now holds a tracer of ``trace``."""
    seen: set = set()

    def walk(obj, path: str, depth: int):
        if isinstance(obj, Tracer):
            if obj._trace is trace:
                _leak(path, obj)
            return
        if depth > _MAX_DEPTH or isinstance(obj, _OPAQUE) or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, dict):
            for k, v in list(obj.items()):
                walk(v, f"{path}[{k!r}]", depth + 1)
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                walk(v, f"{path}[{i}]", depth + 1)
        else:
            for k, v in _attributes(obj):
                walk(v, f"{path}.{k}", depth + 1)

    for name, obj in roots:
        walk(obj, name, 0)


def _attributes(obj) -> list:
    attrs = list(getattr(obj, "__dict__", {}).items())
    for cls in type(obj).__mro__:
        for k in getattr(cls, "__slots__", ()):
            if k != "__weakref__" and hasattr(obj, k):
                attrs.append((k, getattr(obj, k)))
    return attrs


def _leak(path: str, tracer: Tracer):
    made = tracer._loc.describe() if tracer._loc else "an unknown place"
    raise EscapedTracerError(
        f"tracejit: the jitted function stored a traced value into its argument {path}; the "
        f"caller's object would be left holding a tracer.\n  value made at {made}\n"
        "What to do: return the value from the function and store it outside, e.g. "
        "`out, state['m'] = f(x, state)`"
        + ("; for a method's attribute, decorate the method with @tracejit.jit in its class "
           "(the array attributes of its self are then written back after each call)."
           if path.startswith("self.") else "."))
