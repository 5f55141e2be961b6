"""A call's cache key: which arguments are static, and what of each dynamic leaf matters.

Kept apart from tracing: the key decides whether a call traces at all. A leaf's part is its
dtype and shape (Python scalars: their type, as weak types); static arguments count by value.
"""
from __future__ import annotations

import inspect

import numpy as np

from ..tracer.arguments import is_device_array
from ..tracer.errors import ConcretizationTypeError, user_location
from ..tracer.pytree import flatten, is_registered_node
from ..tracer.tracer import Tracer


def leaf_key(leaf):
    """A leaf's part of the cache key. ``("other", type)`` sends the leaf to ``abstract_leaf``
    when tracing, which refuses what cannot be traced: so ndarray subclasses (np.matrix, masked
    arrays; np.memmap is a plain array) and ints beyond int64 must not share a plain key."""
    t = type(leaf)
    if t is np.ndarray:
        return (leaf.dtype, leaf.shape)
    if t is float or t is bool:
        return t
    if t is int:
        return t if -2**63 <= leaf < 2**63 else ("other", t)
    if isinstance(leaf, np.generic):
        return (leaf.dtype, ())
    if isinstance(leaf, Tracer):
        return None
    if isinstance(leaf, np.memmap):
        return (leaf.dtype, leaf.shape)
    if is_device_array(leaf):          # (the CUDA backend's) device array: as its host twin
        return (np.dtype(leaf.dtype), tuple(leaf.shape))
    return ("other", t)


def fast_leaf_key(a):
    """The key of a plain ndarray argument (jit's fast path), None for anything else."""
    return (a.dtype, a.shape) if type(a) is np.ndarray else None


def describe_leaf_key(k) -> str:
    if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], np.dtype):
        return f"{k[0]}{list(k[1])}"
    if isinstance(k, type):
        return f"Python {k.__name__} (weak)"
    return str(k)


class Signature:
    """Splits a call's arguments into static values and a dynamic pytree, fast."""

    def __init__(self, fn, static_argnums, static_argnames):
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        positional = [p.name for p in params
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.arg_names = positional
        nums = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums or ())
        names = {static_argnames} if isinstance(static_argnames, str) else set(
            static_argnames or ())
        var_positional = any(p.kind == p.VAR_POSITIONAL for p in params)
        var_keyword = any(p.kind == p.VAR_KEYWORD for p in params)
        for n in list(nums):
            if n < 0:
                # as JAX: counted from the end of the positional parameters
                if not params or var_positional or n < -len(positional):
                    raise ValueError(f"tracejit.jit: static_argnums={static_argnums}: a "
                                     "negative number counts from the end of the "
                                     "positional parameters, which "
                                     f"{getattr(fn, '__name__', 'the function')} does not "
                                     "fix (*args) or has fewer of; use a non-negative one")
                nums.discard(n)
                n += len(positional)
                nums.add(n)
            if n < len(positional):
                names.add(positional[n])
            elif params and not var_positional:
                # as JAX: a number no call can fill is a mistake, not a no-op
                raise ValueError(f"tracejit.jit: static_argnums={sorted(nums)}, but "
                                 f"{getattr(fn, '__name__', 'the function')} takes only "
                                 f"{len(positional)} positional arguments")
        if params and not var_keyword:
            named = {p.name for p in params}
            unknown = sorted(n for n in names if n not in named)
            if unknown:
                raise ValueError(f"tracejit.jit: static_argnames {unknown} name no parameter "
                                 f"of {getattr(fn, '__name__', 'the function')} (it takes "
                                 f"{sorted(named)})")
        for name in list(names):
            if name in positional:
                nums.add(positional.index(name))
        self.static_nums = frozenset(nums)
        self.static_names = frozenset(names)

    def split(self, args, kwargs):
        if not self.static_nums and not self.static_names:
            return (), args, kwargs
        static = []
        dyn_args = list(args)
        for i in self.static_nums:
            if i < len(args):
                static.append((i, _hashable(args[i], self.name(i))))
                dyn_args[i] = None
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self.static_names:
                static.append((k, _hashable(v, k)))
            else:
                dyn_kwargs[k] = v
        return tuple(sorted(static, key=str)), tuple(dyn_args), dyn_kwargs

    def join(self, static, dyn_args, dyn_kwargs):
        args = list(dyn_args)
        kwargs = dict(dyn_kwargs)
        for k, v in static:
            if isinstance(k, int):
                args[k] = v
            else:
                kwargs[k] = v
        return args, kwargs

    def name(self, i):
        """The name of positional argument ``i``, for messages."""
        return self.arg_names[i] if i < len(self.arg_names) else f"args[{i}]"


class StaticKey:
    """A static value's part of the cache key (a static argument, a jitted method's static
    attribute): equal only to an equal value of the same type, also inside containers (1, 1.0
    and True are equal in Python but not to NumPy: x * 2 of an int8 array is int8, x * 2.0
    float64); an unhashable value is compared by identity."""
    __slots__ = ("value", "_key")

    def __init__(self, value):
        self.value, self._key = value, typed(value)

    def __eq__(self, other):
        return type(other) is StaticKey and other._key == self._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return repr(self.value)


def typed(v):
    """``v`` with the type of every value in it, hashable, for comparing static values."""
    if type(v) in (tuple, list):
        return (type(v), tuple(typed(c) for c in v))
    if type(v) is dict:
        return (dict, tuple((k, typed(c)) for k, c in sorted(v.items(), key=str)))
    if type(v) is frozenset:
        return (frozenset, frozenset(typed(c) for c in v))
    if is_registered_node(v):
        # a static nn.Module (static_argnums, or a jitted method's self.drop): by identity
        # and its static structure, so model.eval() or drop.p = 0 traces again (it kept the
        # train-mode trace: the identity alone does not change)
        try:
            return (type(v), _Identity(v), flatten(v)[1])
        except (TypeError, RecursionError):  # an unhashable static attribute, a cycle
            return _Identity(v)
    try:
        hash(v)
    except TypeError:
        return _Identity(v)
    return (type(v), v)


class _Identity:
    """An unhashable static value, equal only to itself."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _Identity and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _hashable(value, name):
    if isinstance(value, Tracer):
        # Checked first: a Tracer is unhashable too, and "pass a tuple" would mislead.
        # (a ConcretizationError: grad(jit(f, static_argnums=1))(x, 3) makes it static then)
        raise ConcretizationTypeError(
            f"static argument {name!r}, a traced value here (the jitted function is called "
            "inside another trace, jit or grad, that traces it: make it static there too),",
            user_location())
    try:
        hash(value)
    except TypeError:
        loc = user_location()
        raise TypeError(
            f"tracejit: static argument {name!r} has the unhashable type "
            f"{type(value).__name__}." + (f"\n  in the call at {loc.describe()}" if loc else "")
            + "\nStatic arguments are part of the cache key, so they must be hashable. What "
            "to do: pass a tuple instead of a list, or make the argument dynamic (not static) "
            "if it is an array.") from None
    if isinstance(value, (np.ndarray, Tracer)):
        raise TypeError(f"tracejit: static argument {name!r} is an array; arrays must be "
                        "dynamic arguments (remove it from static_argnums)")
    return value
