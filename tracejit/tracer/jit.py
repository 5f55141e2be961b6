"""``jit``: trace once per abstract signature, cache, and run the compiled program.

The cache key is the pytree structure of the arguments, each leaf's dtype and shape (Python
scalars as weak types), and the values of static arguments. A cached call costs building that
key, one dictionary lookup and the call of the compiled program.
"""
from __future__ import annotations

import collections
import functools
import inspect
import sys
import warnings

import numpy as np

from ..config import config
from .pytree import flatten, flatten_with_paths, unflatten
from .tracer import Tracer
from .tracing import Traced, trace


class RetraceWarning(UserWarning):
    """A jitted function keeps being traced again: some argument keeps changing."""


def _leaf_key(leaf):
    t = type(leaf)
    if t is np.ndarray:
        return (leaf.dtype, leaf.shape)
    if t is float or t is int or t is bool:
        return t
    if isinstance(leaf, np.generic):
        return (leaf.dtype, ())
    if isinstance(leaf, Tracer):
        return None
    if isinstance(leaf, np.ndarray):
        return (leaf.dtype, leaf.shape)
    return ("other", t)


def _describe_leaf_key(k) -> str:
    if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], np.dtype):
        return f"{k[0]}{list(k[1])}"
    if isinstance(k, type):
        return f"Python {k.__name__} (weak)"
    return str(k)


class _Signature:
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
        for n in list(nums):
            if n < 0:
                raise ValueError("static_argnums must be non-negative")
            if n < len(positional):
                names.add(positional[n])
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
                static.append((i, _hashable(args[i], self._name(i))))
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

    def _name(self, i):
        return self.arg_names[i] if i < len(self.arg_names) else f"args[{i}]"


def _hashable(value, name):
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"tracejit: static argument {name!r} has the unhashable type "
            f"{type(value).__name__}. Static arguments are part of the cache key, so they must "
            "be hashable: pass a tuple instead of a list, or make the argument dynamic (not "
            "static) if it is an array.") from None
    if isinstance(value, (np.ndarray, Tracer)):
        raise TypeError(f"tracejit: static argument {name!r} is an array; arrays must be "
                        "dynamic arguments (remove it from static_argnums)")
    return value


class CompiledEntry:
    """One cache entry: the trace, and the program that runs it."""

    def __init__(self, traced: Traced, program):
        self.traced = traced
        self.program = program
        self._out_tree = traced.out_tree
        self._scalar = [r.type.shape == () for r in traced.function.results]

    def __call__(self, leaves):
        outs = self.program(leaves)
        outs = [o[()] if s else o for o, s in zip(outs, self._scalar)]
        return unflatten(self._out_tree, outs)


class JittedFunction:
    def __init__(self, fn, static_argnums=None, static_argnames=None, backend=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._sig = _Signature(fn, static_argnums, static_argnames)
        self._backend = backend
        self._cache: dict = {}
        self._keys: list = []
        self._changes: collections.Counter = collections.Counter()
        self._warned = False
        self.trace_count = 0

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def _key(self, args, kwargs):
        static, dyn_args, dyn_kwargs = self._sig.split(args, kwargs)
        leaves, treedef = flatten((dyn_args, dyn_kwargs))
        return static, dyn_args, dyn_kwargs, leaves, (treedef, static,
                                                      tuple(map(_leaf_key, leaves)))

    def __call__(self, *args, **kwargs):
        if config.disable_jit:
            return self.fn(*args, **kwargs)
        static, dyn_args, dyn_kwargs, leaves, key = self._key(args, kwargs)
        entry = self._cache.get(key)
        if entry is None:
            if any(type(leaf) is Tracer for leaf in leaves):
                # Called inside another trace (grad, or an enclosing jit): trace through.
                return self.fn(*args, **kwargs)
            entry = self._compile(static, dyn_args, dyn_kwargs, leaves, key)
        return entry(leaves)

    def _trace(self, static, dyn_args, dyn_kwargs):
        args, kwargs = self._sig.join(static, dyn_args, dyn_kwargs)
        names = self._sig.arg_names

        def body(*dyn_a, **dyn_k):
            a, k = self._sig.join(static, dyn_a, dyn_k)
            return self.fn(*a, **k)

        return trace(body, tuple(dyn_args), dyn_kwargs, getattr(self.fn, "__name__", "fn"),
                     names)

    def _compile(self, static, dyn_args, dyn_kwargs, leaves, key) -> CompiledEntry:
        for leaf_key, leaf in zip(key[2], leaves):
            if isinstance(leaf_key, tuple) and leaf_key[:1] == ("other",):
                # Produces the error that names the argument.
                from .tracing import abstract_leaf
                _, paths, _ = flatten_with_paths((dyn_args, dyn_kwargs))
                abstract_leaf(leaf, paths[leaves.index(leaf)])
        if self._keys:
            self._note_retrace(key, dyn_args, dyn_kwargs)
        traced = self._trace(static, dyn_args, dyn_kwargs)
        self.trace_count += 1
        program = self._make_program(traced)
        entry = CompiledEntry(traced, program)
        self._cache[key] = entry
        self._keys.append(key)
        return entry

    def _make_program(self, traced: Traced):
        from ..backend import compile_function
        return compile_function(traced.function, backend=self._backend)

    # -- retrace diagnostics ------------------------------------------------------------------
    def _note_retrace(self, key, dyn_args, dyn_kwargs):
        changes = self._explain(self._keys[-1], key, dyn_args, dyn_kwargs)
        for arg, _ in changes:
            self._changes[arg] += 1
        name = getattr(self.fn, "__qualname__", "function")
        if config.explain_retrace:
            detail = "; ".join(f"{a}: {d}" for a, d in changes) or "no visible change"
            print(f"tracejit: retracing {name} (trace #{self.trace_count + 1}): {detail}",
                  file=sys.stderr)
        if not self._warned and self.trace_count + 1 >= config.retrace_warn:
            self._warned = True
            culprit = ", ".join(a for a, _ in self._changes.most_common(3))
            warnings.warn(
                f"tracejit: {name} has been traced {self.trace_count + 1} times; the argument "
                f"that keeps changing is {culprit}. Each new shape, dtype, structure or static "
                "value traces again. Keep shapes fixed (pad batches), or set "
                "TRACEJIT_EXPLAIN_RETRACE=1 to see every change.", RetraceWarning, stacklevel=3)

    def _explain(self, old, new, dyn_args, dyn_kwargs):
        (old_tree, old_static, old_leaves), (new_tree, new_static, new_leaves) = old, new
        changes = []
        if old_static != new_static:
            o, n = dict(old_static), dict(new_static)
            for k in sorted(set(o) | set(n), key=str):
                if o.get(k) != n.get(k):
                    arg = self._sig._name(k) if isinstance(k, int) else k
                    changes.append((arg, f"static value {o.get(k)!r} -> {n.get(k)!r}"))
        if old_tree != new_tree:
            changes.append(("the arguments' structure",
                            f"pytree structure changed: {old_tree} -> {new_tree}"))
            return changes
        _, paths, _ = flatten_with_paths((dyn_args, dyn_kwargs))
        from .tracing import _rename
        for p, a, b in zip(paths, old_leaves, new_leaves):
            if a != b:
                arg = _rename(p, self._sig.arg_names)
                if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
                    what = f"shape {tuple(a[1])} -> {tuple(b[1])}"
                elif isinstance(a, tuple) and isinstance(b, tuple) and a[1] == b[1]:
                    what = f"dtype {a[0]} -> {b[0]}"
                else:
                    what = f"{_describe_leaf_key(a)} -> {_describe_leaf_key(b)}"
                changes.append((arg, what))
        return changes

    # -- inspection ---------------------------------------------------------------------------
    def lower(self, *args, **kwargs):
        from ..lowered import Lowered
        static, dyn_args, dyn_kwargs, leaves, key = self._key(args, kwargs)
        entry = self._cache.get(key) or self._compile(static, dyn_args, dyn_kwargs, leaves, key)
        return Lowered(entry)

    def clear_cache(self):
        self._cache.clear()
        self._keys.clear()

    @property
    def cache_size(self) -> int:
        return len(self._cache)


def jit(fn=None, *, static_argnums=None, static_argnames=None, backend=None):
    """Compile ``fn`` by tracing it; usable as ``@jit`` or ``@jit(static_argnums=...)``."""
    if fn is None:
        return lambda f: JittedFunction(f, static_argnums, static_argnames, backend)
    return JittedFunction(fn, static_argnums, static_argnames, backend)


def make_ir(fn, static_argnums=None, static_argnames=None):
    """``make_ir(f)(*args)`` returns the traced Function; print it to see the IR."""
    sig = _Signature(fn, static_argnums, static_argnames)

    def build(*args, **kwargs):
        static, dyn_args, dyn_kwargs = sig.split(args, kwargs)

        def body(*a, **k):
            a2, k2 = sig.join(static, a, k)
            return fn(*a2, **k2)

        return trace(body, tuple(dyn_args), dyn_kwargs, getattr(fn, "__name__", "fn"),
                     sig.arg_names).function

    return build
