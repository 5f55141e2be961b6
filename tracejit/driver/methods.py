"""Jitted methods: ``self`` as an argument, its arrays dynamic and the rest static.

A pytree node of its own, so that the cache key, tracing and retrace messages treat the
object's attributes as they treat any other argument.
"""
from __future__ import annotations

import numpy as np

from ..tracer.pytree import register_pytree_node
from ..tracer.tracer import Tracer


class BoundSelf:
    """``self`` of a jitted method. Its array attributes (and containers of arrays) are dynamic
    arguments, so updating ``self.w`` is seen by the next call; its other attributes are static
    (by value, or by identity when unhashable), so ``self.n_heads`` can be used as a shape.
    While tracing, the method sees a shallow copy of the object with traced arrays.
    """
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


class _Static:
    """A static attribute of a method's ``self``: compared by value when it can be frozen into
    something hashable (lists and dicts of hashables included), else by identity."""
    __slots__ = ("value", "key")

    def __init__(self, value):
        self.value = value
        self.key = _freeze(value)

    def __eq__(self, other):
        return type(other) is _Static and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return repr(self.value)


class _Identity:
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _Identity and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _freeze(v):
    if type(v) in (list, tuple):
        return (type(v), tuple(_freeze(c) for c in v))
    if type(v) is dict:
        return (dict, tuple((k, _freeze(c)) for k, c in sorted(v.items(), key=str)))
    try:
        hash(v)
        return v
    except TypeError:
        return _Identity(v)


def _is_array_tree(v) -> bool:
    if isinstance(v, (np.ndarray, Tracer)):
        return True
    if type(v) in (list, tuple) and v:
        return all(_is_array_tree(c) for c in v)
    if type(v) is dict and v:
        return all(_is_array_tree(c) for c in v.values())
    return False


def _flatten_self(b: BoundSelf):
    state = vars(b.obj)
    dyn = sorted(k for k, v in state.items() if _is_array_tree(v))
    static = tuple((k, _Static(v)) for k, v in sorted(state.items()) if k not in dyn)
    return [state[k] for k in dyn], (type(b.obj), tuple(dyn), static), [
        f".{k}" for k in dyn]


def _unflatten_self(aux, children):
    cls, dyn, static = aux
    obj = object.__new__(cls)
    obj.__dict__.update({k: v.value for k, v in static})
    obj.__dict__.update(zip(dyn, children))
    return obj


def _set_attribute(b: BoundSelf, i: int, value) -> None:
    """A jitted method stored into ``self.<attr>``: the caller's object gets the new value."""
    setattr(b.obj, _flatten_self(b)[1][1][i], value)


register_pytree_node(BoundSelf, _flatten_self, _unflatten_self, wrap=BoundSelf,
                     set_child=_set_attribute)


def unwrap_self(args):
    """The arguments as the user's function takes them (``self`` itself, not BoundSelf)."""
    return [a.obj if type(a) is BoundSelf else a for a in args]
