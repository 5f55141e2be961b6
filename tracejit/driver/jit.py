"""``jit``: trace once per abstract signature, cache, and run the compiled program.

The cache key (signature.py) is the pytree structure of the arguments, each leaf's dtype and
shape (Python scalars as weak types), and the values of static arguments. A cached call costs
building that key, one dictionary lookup and the call of the compiled program.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from ..codegen.errors import ArgumentMismatch
from ..config import config
from ..tracer.arguments import abstract_leaf
from ..tracer.errors import call_error
from ..tracer.pytree import flatten, flatten_with_paths, is_registered_node
from ..tracer.trace_function import Traced, _rename, scalar_kinds, scalar_kinds_hold, trace
from ..tracer.tracer import Tracer
from ..ir.passes.remat import check_mode
from .backend import compile_function
from .guards import ArrayContents, Guards, ReachedArrays, same_kind
from .entry import CompiledEntry
from .lowered import Lowered
from .methods import (BoundSelf, ClassSelf, attributes_restored_on_error, bound_object,
                      object_state, unwrap_self)
from .retrace import Retraces
from .signature import (Signature, StaticKey, describe_leaf_key, fast_leaf_key,
                        leaf_key)

# What a last-used entry raises for arguments that are not its own: ArgumentMismatch for
# shapes, TypeError from Numba's dispatcher for dtypes, layouts, argument counts, tracers.
_NOT_THIS_ENTRY = (TypeError, ArgumentMismatch)
_MAX_SELVES = 8


class JittedFunction:
    def __init__(self, fn, static_argnums=None, static_argnames=None, backend=None,
                 tiered=None, device_results=False, remat="none"):
        functools.update_wrapper(self, fn)
        self.remat = check_mode(remat)
        self.fn = fn
        self._sig = Signature(fn, static_argnums, static_argnames)
        self._backend = backend
        self._tiered = tiered
        self._device_results = device_results
        self._cache: dict = {}
        self._fast: dict = {}
        self._last = None
        self._layouts: dict = {}      # (key, strides) -> entry traced for those layouts
        self._retraces = Retraces(fn, self._sig)
        # Globals and closure values the traces baked in (guards.py): checked on every call,
        # a change forgets every trace; None until the first trace
        self._guards: Guards | None = None
        # Arrays traces left constants (guards.ArrayContents), checked at every call; None
        # while there are none, so the common call pays one identity check
        self._contents: ArrayContents | None = None
        # Arrays traces took through attributes and containers, read again by their paths at
        # every call (guards.ReachedArrays); None while there are none
        self._reached: ReachedArrays | None = None
        self._guard_changes: list = []
        self._selves: list = []       # a jitted method's instances traced, for the guards
        self.trace_count = 0
        self._owner = None            # the class of a jitted method (__set_name__)
        # Held while tracing/compiling and while _cache, _fast and the traced keys change, so
        # threads making first calls at once trace once; the cached paths only read (lock-free).
        self._lock = threading.RLock()

    @property
    def __tracejit_body__(self):
        """What a call inside another trace runs: the function itself, traced through."""
        return self.fn

    def __set_name__(self, owner, name):
        self._owner = owner

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, self._self_arg(obj))

    def _self_arg(self, obj):
        """A method's ``self`` as an argument: its arrays dynamic, the rest static."""
        if 0 in self._sig.static_nums or object_state(obj) is None:
            return obj
        if isinstance(obj, type):
            return ClassSelf(obj)
        return BoundSelf(obj)

    def _bind_unbound(self, args):
        """``C.method(obj, x)``: the instance passed explicitly, as ``obj.method(x)`` passes
        it (the class is known from ``__set_name__``)."""
        if self._owner is not None and args and isinstance(args[0], self._owner):
            return (self._self_arg(args[0]),) + tuple(args[1:])
        return args

    def _key(self, args, kwargs):
        static, dyn_args, dyn_kwargs = self._sig.split(args, kwargs)
        leaves, treedef = flatten((dyn_args, dyn_kwargs))
        typed_static = tuple((k, StaticKey(v)) for k, v in static) if static else ()
        return static, dyn_args, dyn_kwargs, leaves, (treedef, typed_static,
                                                      tuple(map(leaf_key, leaves)))

    def __call__(self, *args, **kwargs):
        if config.disable_jit:
            return self.fn(*unwrap_self(args), **kwargs)
        guards = self._guards
        if guards is not None:
            changes = guards.changed(self._swappable)
            if changes is not None:
                self._forget(changes)
            elif guards.swaps:
                self._swap(guards)
        contents = self._contents
        if contents is not None:
            changes = contents.changed()
            if changes is not None:
                self._forget(changes)
        reached = self._reached
        if reached is not None and reached.any_moved():
            self._moved(reached)
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
            entry = self._fast.get(tuple(map(fast_leaf_key, args)))
            if entry is not None and not (entry.layout_dependent and _strided(args)):
                self._last = entry.guarded
                return entry(args)
        args = self._bind_unbound(args)
        static, dyn_args, dyn_kwargs, leaves, key = self._key(args, kwargs)
        try:
            entry = self._cache.get(key)
        except TypeError as e:
            raise _unhashable_aux_error(key[0]) or e from None
        if entry is None:
            if any(type(leaf) is Tracer for leaf in leaves):
                # Called inside another trace (grad, or an enclosing jit): trace through.
                return self.fn(*unwrap_self(args), **kwargs)
            with self._lock:
                entry = self._cache.get(key)      # another thread may have compiled it
                if entry is None:
                    entry = self._compile(static, dyn_args, dyn_kwargs, leaves, key)
        kinds = entry.scalar_kinds
        if (entry.layout_dependent and _strided(leaves)) or (
                kinds is not None and not scalar_kinds_hold(leaves, kinds)):
            return self._for_layouts(static, dyn_args, dyn_kwargs, leaves, key)(
                leaves, (dyn_args, dyn_kwargs))
        if (not kwargs and not static and len(leaves) == len(args)
                and all(type(a) is np.ndarray for a in args)):
            with self._lock:
                self._fast[tuple(map(fast_leaf_key, args))] = entry
            self._last = entry.guarded
        return entry(leaves, (dyn_args, dyn_kwargs))

    def _for_layouts(self, static, dyn_args, dyn_kwargs, leaves, key) -> CompiledEntry:
        """The entry for arguments the first trace does not hold for: not all C-contiguous,
        where it read their layout (views.py), or NumPy scalars where it had 0-d arrays (or the
        other way round), where it wrote into or viewed one (a NumPy scalar is immutable).
        Traced again for them, cached by their strides and kinds."""
        key = (key, tuple(a.strides if _strided((a,)) else None for a in leaves),
               scalar_kinds(leaves))
        with self._lock:
            entry = self._layouts.get(key)
            if entry is None:
                entry = self._layouts[key] = self._compile(static, dyn_args, dyn_kwargs,
                                                           leaves, None)
        return entry

    def _trace(self, static, dyn_args, dyn_kwargs, layouts=False, outside=()) -> Traced:
        names, sig, fn = self._sig.arg_names, self._sig, self.fn

        def body(*dyn_a, **dyn_k):
            a, k = sig.join(static, dyn_a, dyn_k)
            return fn(*a, **k)     # (a closure over fn: trace() follows it to fn's globals)

        statics = [(self._sig.name(k) if isinstance(k, int) else k, v) for k, v in static]
        # jit(obj.step) runs on obj itself: ``self.h = h`` would leave obj holding a tracer,
        # so obj is walked by the leak check as an argument is (and put back if it fails)
        obj = bound_object(self.fn)
        # the arrays in a static argument's attributes and containers, and in those of a
        # jitted method's self, of jit(obj.step)'s obj and of jit(model)'s model, are read at
        # every call as a global object's are (baked in, jit(model) missed an in-place update
        # of its weights, and a BatchNorm's running statistics could not be written back)
        reach = statics + [("self", a.obj) for a in dyn_args[:1] if type(a) is BoundSelf]
        if obj is not None:
            reach.append(("self", obj))
        elif is_registered_node(self.fn):
            reach.append(("self", self.fn))
        roots = statics + ([("self", obj)] if obj is not None else [])
        with attributes_restored_on_error(obj):
            return trace(body, tuple(dyn_args), dyn_kwargs, getattr(self.fn, "__name__", "fn"),
                         names, roots, writes_back=True, layouts=layouts,
                         external_arrays=True, outside=outside, reach=tuple(reach))

    def _compile(self, static, dyn_args, dyn_kwargs, leaves, key) -> CompiledEntry:
        """Trace and compile for ``key`` (None: for the arguments' own layouts, not cached
        here)."""
        if key is not None:
            for i, (k, leaf) in enumerate(zip(key[2], leaves)):
                if isinstance(k, tuple) and k[:1] == ("other",):
                    # Produces the error that names the argument.
                    _, paths, _ = flatten_with_paths((dyn_args, dyn_kwargs))
                    abstract_leaf(leaf, _rename(paths[i], self._sig.arg_names))
            if self._retraces.keys:
                self._retraces.note(key, dyn_args, dyn_kwargs, self.trace_count,
                                    self._guard_changes)
            self._guard_changes = []
        # The guards read their values before the trace, so that one another thread changes
        # during it traces again (guards.settle)
        if dyn_args and type(dyn_args[0]) is BoundSelf and \
                all(o is not dyn_args[0].obj for o in self._selves):
            # (the last few instances: each is read at every call, and held alive)
            self._selves = self._selves[-(_MAX_SELVES - 1):] + [dyn_args[0].obj]
        guards = Guards(self.fn, self._selves)
        traced = self._trace(static, dyn_args, dyn_kwargs, layouts=key is None,
                             outside=guards.arrays())
        guards.settle()
        self.trace_count += 1
        self._guards = guards or None
        if traced.reached:
            if self._reached is None:
                self._reached = ReachedArrays()
            self._reached.add(traced.reached)
        if traced.constant_arrays:
            if self._contents is None:
                self._contents = ArrayContents()
            self._contents.add(traced.constant_arrays)
        program = compile_function(traced.function, backend=self._backend, tiered=self._tiered,
                                   device_results=self._device_results, remat=self.remat)
        entry = CompiledEntry(traced, program)
        if key is not None:
            self._cache[key] = entry
            # only the last key is compared with the next (retrace.explain): a list of every
            # key grew by one per retrace for good, guards' retraces too (a global changed
            # each step), the static values in them held alive
            self._retraces.keys[:] = [key]
        return entry

    # -- inspection ---------------------------------------------------------------------------
    def lower(self, *args, **kwargs):
        args = self._bind_unbound(args)
        static, dyn_args, dyn_kwargs, leaves, key = self._key(args, kwargs)
        with self._lock:
            entry = self._cache.get(key) or self._compile(static, dyn_args, dyn_kwargs, leaves,
                                                          key)
        return Lowered(entry, self.remat)

    def _swappable(self, old, new) -> bool:
        """A global or a guarded attribute rebound from ``old`` to ``new`` (``W = W - lr * dW``
        in a training loop): every program takes ``old`` as a parameter and ``new`` fits it,
        so it is passed instead of tracing again (a program that baked it in must trace)."""
        if type(old) is not np.ndarray and type(old) is not np.memmap:
            return False
        if self._reached is not None and not self._reached.follows(old, new):
            return False             # (also reached by a path that does not hold the new one)
        entries = list(self._cache.values()) + list(self._layouts.values())
        return bool(entries) and same_kind(old, new) and all(
            e.takes(old) for e in entries)

    def _swap(self, guards: Guards) -> None:
        with self._lock:
            swaps, guards.swaps = guards.swaps, {}
            for entry in list(self._cache.values()) + list(self._layouts.values()):
                entry.rebind(swaps)
            if self._reached is not None:
                self._reached.rebound(swaps)
            self._last = None

    def _moved(self, reached: ReachedArrays) -> None:
        """An array the traces took through an attribute or a container was rebound: pass
        the new one where it fits the programs, else trace again (guards.ReachedArrays)."""
        with self._lock:
            moved = reached.moved()
            if moved is None:
                return
            swaps, changes = moved
            if changes:
                self._forget(changes)
                return
            for entry in list(self._cache.values()) + list(self._layouts.values()):
                entry.rebind(swaps)
            self._last = None

    def _forget(self, changes: list) -> None:
        """A global or closure value the traces read has changed: trace again on the next
        call, whatever the arguments (guards.py)."""
        with self._lock:
            for entry in list(self._cache.values()) + list(self._layouts.values()):
                # their background compiles stop at the next stage: a global changed every
                # step (a learning-rate schedule) started one per step, 157 threads at once
                cancel = getattr(entry.program, "cancel", None)
                if cancel is not None:
                    cancel()
            self._cache.clear()
            self._fast.clear()
            self._layouts.clear()
            self._last = None
            self._contents = None
            self._reached = None
            self._selves = []
            self._guard_changes = self._guard_changes + changes

    def clear_cache(self):
        with self._lock:
            self._contents = None
            self._reached = None
            self._selves = []
            self._cache.clear()
            self._fast.clear()
            self._layouts.clear()
            self._last = None
            self._retraces.keys.clear()

    def wait_compiled(self):
        """Wait until every signature traced so far runs compiled code (a tiered program's
        background compile), those traced again for other layouts too; returns self."""
        for entry in list(self._cache.values()) + list(self._layouts.values()):
            wait = getattr(entry.program, "wait", None)
            if wait is not None:
                wait()
        return self

    def stats(self) -> list[dict]:
        """Per traced signature: the tier it runs on now, how many calls each tier ran, and
        how long compiling took (None while it compiles, or for untiered programs); a
        signature traced again for its arguments' layouts has their ``strides`` (else None)."""
        traced = [(key, None, e) for key, e in list(self._cache.items())]
        traced += [(key[0], key[1], e) for key, e in list(self._layouts.items())]
        out = []
        for key, strides, entry in traced:
            p = entry.program
            tiered = hasattr(p, "calls")
            out.append({"signature": [describe_leaf_key(k) for k in key[2]],
                        "strides": strides,
                        "tier": p.tier if tiered else "compiled",
                        "calls": dict(p.calls) if tiered else None,
                        "compile_seconds": p.compile_seconds if tiered else None})
        return out

    @property
    def cache_size(self) -> int:
        return len(self._cache)


def jit(fn=None, *, static_argnums=None, static_argnames=None, backend=None, tiered=None,
        device=None, device_results=False, remat="none"):
    """Compile ``fn`` by tracing it; usable as ``@jit`` or ``@jit(static_argnums=...)``.

    ``tiered`` (default ``config.tiered``, env TRACEJIT_TIERED): a new signature's first calls
    run on NumPy while its kernels compile in the background; ``tiered=False`` waits for the
    compiled kernels before the first call returns (benchmarks, reproducible runs).
    ``device="cuda"`` runs the fused kernels on a GPU (backend "cuda", codegen/cuda/); its
    results are NumPy arrays, or device arrays with ``device_results=True``.
    ``remat``: "none" (default) keeps every value the backward pass of a gradient inside
    ``fn`` reads; "auto" recomputes cheap elementwise ones there instead (from values alive
    then anyway), lowering the arena's peak at some compute, bit for bit the same results; or
    a callable ``policy(op) -> bool`` saying which IR ops (``op.opdef.name``,
    ``op.opdef.category``) may be recomputed (ir/passes/remat.py). ``lower(...).remat`` tells
    the bytes saved."""
    check_mode(remat)
    if device not in (None, "cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}; choose 'cpu' or 'cuda'")
    if device == "cuda":
        if backend not in (None, "cuda"):
            raise ValueError(f"device='cuda' runs on the cuda backend, not {backend!r}")
        backend = "cuda"
    args = (static_argnums, static_argnames, backend, tiered, device_results, remat)
    if fn is None:
        return lambda f: JittedFunction(_function(f), *args)
    return JittedFunction(_function(fn), *args)


def _function(fn):
    """What jit compiles must be callable: jit(x) of an array made a JittedFunction that
    failed only when called, with Python's "'ndarray' object is not callable"."""
    if not callable(fn):
        raise call_error(f"tracejit.jit: expected a function to compile, got "
                         f"{type(fn).__name__}",
                         "pass the function, jit(f), and call the result with the arrays: "
                         "jit(f)(x); settings go in by keyword: jit(f, static_argnums=1)")
    return fn


def make_ir(fn, static_argnums=None, static_argnames=None):
    """``make_ir(f)(*args)`` returns the traced Function; print it to see the IR."""
    sig = Signature(fn, static_argnums, static_argnames)

    def build(*args, **kwargs):
        static, dyn_args, dyn_kwargs = sig.split(args, kwargs)

        def body(*a, **k):
            a2, k2 = sig.join(static, a, k)
            return fn(*a2, **k2)

        return trace(body, tuple(dyn_args), dyn_kwargs, getattr(fn, "__name__", "fn"),
                     sig.arg_names, writes_back=True).function

    return build


def _unhashable_aux(td):
    """The first node of the treedef ``td`` whose aux is unhashable, or None."""
    try:
        hash(td.aux)
    except TypeError:
        return td
    for c in td.children:
        found = _unhashable_aux(c)
        if found is not None:
            return found
    return None


def _unhashable_aux_error(treedef) -> TypeError | None:
    """A registered pytree node whose flatten gave an unhashable aux (part of the cache key):
    an error naming the class (was "unhashable type: 'list'" from the cache lookup)."""
    td = _unhashable_aux(treedef)
    if td is None:
        return None
    name = getattr(td.kind, "__qualname__", td.kind)
    return call_error(f"tracejit: the pytree node {name} flattened to the auxiliary data "
                      f"{td.aux!r}, of the unhashable type {type(td.aux).__name__}; it is "
                      "part of jit's cache key, so it must be hashable.",
                      f"make the flatten function registered for {name} return a hashable "
                      "aux (a tuple instead of a list, a frozenset instead of a set).")


def _strided(leaves) -> bool:
    """Whether any array among ``leaves`` is not C-contiguous."""
    return any(isinstance(a, np.ndarray) and not a.flags.c_contiguous for a in leaves)
