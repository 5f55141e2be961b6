"""Jitted methods: ``self`` as an argument, its arrays dynamic and the rest static.

A pytree node of its own, so that the cache key, tracing and retrace messages treat the
object's attributes as they treat any other argument.
"""
from __future__ import annotations

import contextlib
import types
import weakref

import numpy as np

from ..tracer.external_arrays import slot_names
from ..tracer.pytree import flatten, flatten_with_paths, register_pytree_node, unflatten
from ..tracer.tracer import Tracer
from .signature import StaticKey


class BoundSelf:
    """``self`` of a jitted method. Its array attributes (and containers of arrays) are dynamic
    arguments, so updating ``self.w`` is seen by the next call; its other attributes are static
    (``StaticKey``: by type and value, or by identity when unhashable), so ``self.n_heads``
    can be used as a shape. An attribute holding arrays among other values (an nn.Module, a
    dict of arrays and settings) is split (``_Partitioned``): its arrays dynamic, the rest
    static.
    While tracing, the method sees a shallow copy of the object with traced arrays.
    """
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


def _is_array_tree(v) -> bool:
    if isinstance(v, (np.ndarray, Tracer)):
        return True
    if type(v) in (list, tuple) and v:
        return all(_is_array_tree(c) for c in v)
    if type(v) is dict and v:
        return all(_is_array_tree(c) for c in v.values())
    return False


class _Partitioned:
    """An attribute holding arrays among other values, as a pytree node whose children are
    its array leaves; the other leaves are static, in its aux. (Frozen whole, its arrays were
    baked into the program: an update of self.model.weight was not seen.)

    One wrapper per value while one is alive, so that the trace's record of what the method
    did to ``self`` (container_writes: a child is unchanged if it is the same object) sees the
    attribute unchanged: a new wrapper at each look made every call set ``self.model`` to a
    rebuilt copy of the model, and the user's own reference to it (``model.eval()``,
    ``model.load_state_dict(...)``, ``bn.momentum = ...``) no longer reached the method."""
    __slots__ = ("value", "__weakref__")
    _alive: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()

    def __new__(cls, value):
        held = cls._alive.get(id(value))
        if held is not None and held.value is value:
            return held
        new = object.__new__(cls)
        new.value = value
        cls._alive[id(value)] = new
        return new


def _is_array(v) -> bool:
    return isinstance(v, (np.ndarray, Tracer))


def _holds_arrays(v) -> bool:
    return any(_is_array(leaf) for leaf in flatten(v)[0])


def _is_dynamic(v) -> bool:
    """A leaf beside arrays that is dynamic: an array, or a NumPy number, as in an argument
    (an optimizer state's ``step``, which ``state["step"] + 1`` makes a NumPy scalar: static,
    it traced again at every step)."""
    return _is_array(v) or isinstance(v, (np.number, np.bool_))


def _flatten_partitioned(p: _Partitioned):
    leaves, paths, treedef = flatten_with_paths(p.value)
    dyn = tuple(i for i, leaf in enumerate(leaves) if _is_dynamic(leaf))
    static = tuple((i, StaticKey(leaf)) for i, leaf in enumerate(leaves)
                   if not _is_dynamic(leaf))
    return [leaves[i] for i in dyn], (treedef, dyn, static), [paths[i] for i in dyn]


def _unflatten_partitioned(aux, children):
    treedef, dyn, static = aux
    leaves = [None] * treedef.num_leaves
    for i, c in zip(dyn, children):
        leaves[i] = c
    for i, s in static:
        leaves[i] = s.value
    return unflatten(treedef, leaves)


register_pytree_node(_Partitioned, _flatten_partitioned, _unflatten_partitioned)


def object_state(obj) -> dict | None:
    """An object's attributes, its ``__dict__``'s and its slots' (a slotted class, or a class
    deriving from one: vars() alone missed them); None where it has neither (a namedtuple)."""
    slots = slot_names(type(obj))
    if not slots:
        return vars(obj) if hasattr(obj, "__dict__") else None
    state = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    for k in slots:
        try:
            state[k] = getattr(obj, k)
        except AttributeError:          # a slot not assigned
            pass
    return state if state or hasattr(obj, "__dict__") else None


def _flatten_self(b: BoundSelf):
    state = object_state(b.obj)
    dyn = sorted(k for k, v in state.items() if _is_array_tree(v) or _holds_arrays(v))
    static = tuple((k, StaticKey(v)) for k, v in sorted(state.items()) if k not in dyn)
    return [state[k] if _is_array_tree(state[k]) else _Partitioned(state[k]) for k in dyn], (
        type(b.obj), tuple(dyn), static), [f".{k}" for k in dyn]


def _unflatten_self(aux, children):
    cls, dyn, static = aux
    obj = object.__new__(cls)
    slots = slot_names(cls)
    for k, v in [(k, v.value) for k, v in static] + list(zip(dyn, children)):
        if k in slots:
            object.__setattr__(obj, k, v)   # (as __dict__.update: no __setattr__ of cls)
        else:
            obj.__dict__[k] = v
    return obj


def _set_attribute(b: BoundSelf, i: int, value) -> None:
    """A jitted method stored into ``self.<attr>``: the caller's object gets the new value."""
    setattr(b.obj, _flatten_self(b)[1][1][i], value)


# shares_leaves: an array held in two places of self (tied weights, ``self.out.weight =
# self.emb``) is one argument, as for a Module passed as an argument: ``grad`` of the model
# inside the method sums both uses, and a write through one name is seen through the other.
register_pytree_node(BoundSelf, _flatten_self, _unflatten_self, wrap=BoundSelf,
                     set_child=_set_attribute, shares_leaves=True)


class ClassSelf:
    """``cls`` of a jitted classmethod (``@classmethod`` over ``@jit``): a class has a
    ``__dict__`` but is no instance to copy with traced arrays, so it is static, by identity."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


register_pytree_node(ClassSelf, lambda c: ([], c.obj), lambda aux, children: aux)


def unwrap_self(args):
    """The arguments as the user's function takes them (``self`` itself, not BoundSelf)."""
    return [a.obj if type(a) is BoundSelf or type(a) is ClassSelf else a for a in args]


def bound_object(fn):
    """The instance of a bound method jitted as ``jit(obj.step)``, else None. Its arrays are
    reached from outside (read at every call, writes into them refused), not an argument as
    a decorated method's ``self`` is; the trace runs on the object itself."""
    obj = getattr(fn, "__self__", None)
    if isinstance(fn, types.MethodType) and not isinstance(obj, type) \
            and object_state(obj) is not None:
        return obj
    return None


@contextlib.contextmanager
def attributes_restored_on_error(obj):
    """Trace ``jit(obj.step)`` on ``obj`` itself: if the trace fails (``self.h = h`` stores a
    traced value, refused by the leak check), the attributes it rebound get their old values
    back, so the object is not left holding a tracer (or None: nothing to do)."""
    if obj is None:
        yield
        return
    before = dict(object_state(obj))
    try:
        yield
    except BaseException:
        after = object_state(obj) or {}
        for k, v in list(after.items()):
            if k not in before:
                with contextlib.suppress(AttributeError, TypeError):
                    delattr(obj, k)
            elif v is not before[k]:
                with contextlib.suppress(AttributeError, TypeError):
                    object.__setattr__(obj, k, before[k])
        raise
