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
import threading
import warnings

import numpy as np

from ..config import config
from .errors import ArgumentMismatch, _is_internal, user_location
from .pytree import flatten, flatten_with_paths, register_pytree_node, unflatten
from .tracer import Tracer
from .tracing import Traced, trace


class RetraceWarning(UserWarning):
    """A jitted function keeps being traced again: some argument keeps changing."""


def _leaf_key(leaf):
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
    return ("other", t)


# What a last-used entry raises for arguments that are not its own: ArgumentMismatch for
# shapes, TypeError from Numba's dispatcher for dtypes, layouts, argument counts, tracers.
_NOT_THIS_ENTRY = (TypeError, ArgumentMismatch)


def _fast_leaf_key(a):
    return (a.dtype, a.shape) if type(a) is np.ndarray else None


def _describe_leaf_key(k) -> str:
    if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], np.dtype):
        return f"{k[0]}{list(k[1])}"
    if isinstance(k, type):
        return f"Python {k.__name__} (weak)"
    return str(k)


def _user_stacklevel() -> int:
    """The stacklevel for warnings.warn that points at the user's call, not at tracejit."""
    frame, level = sys._getframe(2), 2      # 2: the caller of the function calling us
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


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


class _BoundSelf:
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


def _flatten_self(b: _BoundSelf):
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


register_pytree_node(_BoundSelf, _flatten_self, _unflatten_self)


def _unwrap_self(args):
    return [a.obj if type(a) is _BoundSelf else a for a in args]


class CompiledEntry:
    """One cache entry: the trace, and the program that runs it."""

    def __init__(self, traced: Traced, program):
        self.traced = traced
        self.program = program
        self._out_tree = traced.out_tree
        self._repeats = list(traced.repeats.items())
        self._scalar = [r.type.shape == () for r in traced.function.results]
        # One array result (the common case): skip the pytree rebuild on every call.
        self._single = traced.out_tree.kind == "leaf" and not self._scalar[0]
        self._guarded_of = self._guarded = None

    @property
    def guarded(self):
        """The fastest call, for JittedFunction's last-used entry: no Python-side checks; it
        raises TypeError or ArgumentMismatch when the arguments do not fit (see plan.py).
        None while a tiered program still runs on NumPy."""
        guarded = getattr(self.program, "guarded", None)
        if guarded is not self._guarded_of:
            self._guarded_of = guarded
            if guarded is None:
                self._guarded = None
            elif self._single:
                self._guarded = lambda args: guarded(args)[0]
            else:
                self._guarded = lambda args: self._rebuild(guarded(args))
        return self._guarded

    def __call__(self, leaves):
        outs = self.program(leaves)
        if self._single:
            return outs[0]
        return self._rebuild(outs)

    def _rebuild(self, outs):
        outs = [o[()] if s else o for o, s in zip(outs, self._scalar)]
        for i, j in self._repeats:
            outs[i] = outs[j]
        return unflatten(self._out_tree, outs)


def _child_keys(td) -> list[str]:
    if td.kind is dict:
        return [f"[{k!r}]" for k in td.aux]
    if td.kind is _BoundSelf:
        return [f".{k}" for k in td.aux[1]]
    if hasattr(td.kind, "_fields"):
        return [f".{f}" for f in td.kind._fields]
    return [f"[{i}]" for i in range(len(td.children))]


def _tree_changes(old, new, path: str) -> list[tuple[str, str]]:
    """Where two pytree structures differ: (path, what changed), for retrace explanations."""
    if old == new:
        return []
    if old.kind is _BoundSelf and new.kind is _BoundSelf and old.aux[1] == new.aux[1]:
        a, b = dict(old.aux[2]), dict(new.aux[2])
        out = [(f"{path}.{k}", f"static attribute {a.get(k)!r} -> {b.get(k)!r}")
               for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        if old.aux[0] is not new.aux[0]:
            out.append((path, f"class {old.aux[0].__name__} -> {new.aux[0].__name__}"))
        return out + [c for k, o, n in zip(_child_keys(old), old.children, new.children)
                      for c in _tree_changes(o, n, path + k)]
    if old.kind != new.kind or old.aux != new.aux or len(old.children) != len(new.children):
        return [(path, f"pytree structure {old} -> {new}")]
    return [c for k, o, n in zip(_child_keys(old), old.children, new.children)
            for c in _tree_changes(o, n, path + k)]


class JittedFunction:
    def __init__(self, fn, static_argnums=None, static_argnames=None, backend=None,
                 tiered=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._sig = _Signature(fn, static_argnums, static_argnames)
        self._backend = backend
        self._tiered = tiered
        self._cache: dict = {}
        self._fast: dict = {}
        self._last = None
        self._keys: list = []
        self._changes: collections.Counter = collections.Counter()
        self._warned = False
        self.trace_count = 0
        # Held while tracing/compiling and while _cache, _fast and _keys change, so threads
        # making first calls at once trace once; the cached paths only read (lock-free).
        self._lock = threading.RLock()

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        if 0 in self._sig.static_nums or not hasattr(obj, "__dict__"):
            return functools.partial(self, obj)
        return functools.partial(self, _BoundSelf(obj))

    def _key(self, args, kwargs):
        static, dyn_args, dyn_kwargs = self._sig.split(args, kwargs)
        leaves, treedef = flatten((dyn_args, dyn_kwargs))
        return static, dyn_args, dyn_kwargs, leaves, (treedef, static,
                                                      tuple(map(_leaf_key, leaves)))

    def __call__(self, *args, **kwargs):
        if config.disable_jit:
            return self.fn(*_unwrap_self(args), **kwargs)
        if not kwargs:
            # Fastest path: the entry used last, for positional ndarray arguments. Its compiled
            # code checks dtypes and shapes and raises if they are not its own; the types are
            # checked here, since Numba takes an ndarray subclass (np.matrix) as a plain array.
            last = self._last
            if last is not None:
                for a in args:
                    if type(a) is not np.ndarray:
                        break
                else:
                    try:
                        return last(args)
                    except _NOT_THIS_ENTRY:
                        pass
            # Fast path: positional ndarray arguments only, keyed by their dtypes and shapes.
            entry = self._fast.get(tuple(map(_fast_leaf_key, args)))
            if entry is not None:
                self._last = entry.guarded
                return entry(args)
        static, dyn_args, dyn_kwargs, leaves, key = self._key(args, kwargs)
        entry = self._cache.get(key)
        if entry is None:
            if any(type(leaf) is Tracer for leaf in leaves):
                # Called inside another trace (grad, or an enclosing jit): trace through.
                return self.fn(*_unwrap_self(args), **kwargs)
            with self._lock:
                entry = self._cache.get(key)      # another thread may have compiled it
                if entry is None:
                    entry = self._compile(static, dyn_args, dyn_kwargs, leaves, key)
        if (not kwargs and not static and len(leaves) == len(args)
                and all(type(a) is np.ndarray for a in args)):
            with self._lock:
                self._fast[tuple(map(_fast_leaf_key, args))] = entry
            self._last = entry.guarded
        return entry(leaves)

    def _trace(self, static, dyn_args, dyn_kwargs):
        args, kwargs = self._sig.join(static, dyn_args, dyn_kwargs)
        names = self._sig.arg_names

        def body(*dyn_a, **dyn_k):
            a, k = self._sig.join(static, dyn_a, dyn_k)
            return self.fn(*a, **k)

        statics = [(self._sig._name(k) if isinstance(k, int) else k, v) for k, v in static]
        return trace(body, tuple(dyn_args), dyn_kwargs, getattr(self.fn, "__name__", "fn"),
                     names, statics)

    def _compile(self, static, dyn_args, dyn_kwargs, leaves, key) -> CompiledEntry:
        for i, (leaf_key, leaf) in enumerate(zip(key[2], leaves)):
            if isinstance(leaf_key, tuple) and leaf_key[:1] == ("other",):
                # Produces the error that names the argument.
                from .arguments import abstract_leaf
                from .tracing import _rename
                _, paths, _ = flatten_with_paths((dyn_args, dyn_kwargs))
                abstract_leaf(leaf, _rename(paths[i], self._sig.arg_names))
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
        return compile_function(traced.function, backend=self._backend, tiered=self._tiered)

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
                "TRACEJIT_EXPLAIN_RETRACE=1 to see every change.", RetraceWarning,
                stacklevel=_user_stacklevel())

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
            from .tracing import _rename
            top = {"": "the arguments", "[0]": "the positional arguments",
                   "[1]": "the keyword arguments"}
            changes += [(top.get(p) or _rename(p, self._sig.arg_names), d)
                        for p, d in _tree_changes(old_tree, new_tree, "")]
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
        with self._lock:
            entry = self._cache.get(key) or self._compile(static, dyn_args, dyn_kwargs, leaves,
                                                          key)
        return Lowered(entry)

    def clear_cache(self):
        with self._lock:
            self._cache.clear()
            self._fast.clear()
            self._last = None
            self._keys.clear()

    def wait_compiled(self):
        """Wait until every signature traced so far runs compiled code (a tiered program's
        background compile); returns self."""
        for entry in list(self._cache.values()):
            wait = getattr(entry.program, "wait", None)
            if wait is not None:
                wait()
        return self

    def stats(self) -> list[dict]:
        """Per traced signature: the tier it runs on now, how many calls each tier ran, and
        how long compiling took (None while it compiles, or for untiered programs)."""
        out = []
        for key, entry in list(self._cache.items()):
            p = entry.program
            tiered = hasattr(p, "calls")
            out.append({"signature": [_describe_leaf_key(k) for k in key[2]],
                        "tier": p.tier if tiered else "compiled",
                        "calls": dict(p.calls) if tiered else None,
                        "compile_seconds": p.compile_seconds if tiered else None})
        return out

    @property
    def cache_size(self) -> int:
        return len(self._cache)


def jit(fn=None, *, static_argnums=None, static_argnames=None, backend=None, tiered=None):
    """Compile ``fn`` by tracing it; usable as ``@jit`` or ``@jit(static_argnums=...)``.

    ``tiered`` (default ``config.tiered``, env TRACEJIT_TIERED): a new signature's first calls
    run on NumPy while its kernels compile in the background; ``tiered=False`` waits for the
    compiled kernels before the first call returns (benchmarks, reproducible runs)."""
    if fn is None:
        return lambda f: JittedFunction(f, static_argnums, static_argnames, backend, tiered)
    return JittedFunction(fn, static_argnums, static_argnames, backend, tiered)


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
