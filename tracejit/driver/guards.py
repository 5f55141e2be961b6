"""Guards on the Python values a jitted function reads from its globals and closures.

A trace bakes in every value it reads that is not an argument: a global ``lr = 0.1`` becomes
a constant of the program, a global helper function is inlined as it was. jax.jit does the
same and documents it as a sharp edge; torch.compile guards on such values and compiles again
when one changes, and so does tracejit: after ``lr = 0.2`` (or a notebook cell that redefines
a helper) the next call traces again instead of silently using the old value.

What is guarded: the names the function's code reads as globals or closure variables (its
nested lambdas' and functions' too), and those of the user's Python functions reached that
way (the helpers it calls, a function that ``grad`` or ``jit`` wraps), to a small depth.
Scalars (Python numbers, bools, strings, None, NumPy scalars) are guarded by value, anything
else by identity (an array or a model rebound to a new one, a function redefined); modules
are not guarded. The attributes the code reads from those objects are guarded the same way
(``opt.lr``, ``model.cfg.scale``, and ``self.lr`` inside ``opt.update``: attribute_reads.py),
read from the holding object's ``__dict__`` as a global is from its module's. Arrays are read
at every call (tracer/external_arrays.py), so an array changed in place is seen, those held
in attributes and containers too. A plain dict's entries read with a constant key
(``cfg["lr"]``, from a global or closure dict) are guarded as attributes are; other values
inside containers (``cfg[k]``, ``cfg["opt"]["lr"]``) are not: a rebound one is not seen.
An nn.Module among those values (or the jitted object itself, ``jit(model)``) is guarded by
its static structure too (``model.eval()``, ``drop.p = 0``), compared again only after a
Module's static attribute was set (``pytree.note_static_change``).

Cost per call: one identity check per guarded name or attribute (C loops: ``itemgetter`` per
dict, ``map(is_, ...)``); a value is fingerprinted only when the object bound to its name is
not the one seen last.
"""
from __future__ import annotations

import functools
import inspect
import types
from itertools import repeat
from operator import attrgetter, is_, itemgetter

import numpy as np

from .attribute_reads import (MAX_READS, chains, guardable_root, own_attribute, read_chain,
                              self_attributes, subscripts)
from ..tracer.external_arrays import MAX_DEPTH, MAX_FUNCTIONS, REACH_ITEMS, liftable, resolve
from ..tracer.pytree import flatten, is_registered_node, static_changes
from ..tracer.user_code import MISSING, cell_value, global_names, is_library, stored_names

_CONTENTS = attrgetter("cell_contents")
_WRITES = frozenset(("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_ATTR", "DELETE_ATTR",
                     "STORE_DEREF", "DELETE_DEREF"))
_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)


class Guards:
    """The guarded names of one function, with the values seen at its last check."""

    def __init__(self, fn, selves=()):
        found = _Collector()
        found.visit(fn, 0)
        for obj in selves:       # a jitted method's instances traced: self.opt.lr
            found.self_chains(fn, obj)
        # values are read in this order: each globals dict's names, then the cells
        self._reads = [(g, tuple(n for n, _ in names), itemgetter(*[n for n, _ in names]))
                       for g, names in found.globals.values()]
        self._labels = [label for _, names in found.globals.values() for _, label in names]
        self._labels += [label for _, label in found.cells]
        self._cell_list = tuple(c for c, _ in found.cells)
        # each value's bare name (n, lr), and the names the user's code reached stores into
        self._names = [n for _, names in found.globals.values() for n, _ in names]
        self._names += [c.split(" ")[0] for _, c in found.cells]
        self._written = found.written

        self._seen = self._read()
        self._prints = [_fingerprint(v) for v in self._seen]
        self.swaps: dict = {}            # changed(swappable)'s: {id(old array): new array}
        # nn.Modules the code reads (a global model, jit(model), jit(model.forward), a list
        # of layers): their static structure (training, Dropout's p) is no identity these
        # guards see change, so model.eval() ran the train-mode trace (dropout on)
        roots = list(zip(self._labels, self._seen)) + [
            ("the jitted object", o) for o in (
                fn, fn.__self__ if isinstance(fn, types.MethodType) else None)]
        self._trees = [[label, v, None] for label, v in roots if _structured(v)]
        self._version = -1
        self._structures()

    def __bool__(self) -> bool:
        return bool(self._labels or self._trees)

    def _structures(self) -> list:
        """Take the structures of the Modules held as they are now; the labels of those that
        changed since they were taken (compared only after a Module's static attribute was
        set anywhere: flattening a model at every call cost more than the call)."""
        out = []
        if self._version == static_changes():
            return out
        self._version = static_changes()
        for rec in self._trees:
            try:
                td = flatten(rec[1])[1]
            except (TypeError, RecursionError):   # an unhashable static attribute, a cycle
                td = None
            if rec[2] is not None and td != rec[2]:
                out.append(rec[0])
            rec[2] = td
        return out

    def arrays(self) -> list[tuple[str, object]]:
        """(label, array) of the writeable arrays among the guarded values (``cfg.scale``,
        ``params["W"]``): the trace reads them at every call (tracer/external_arrays.py),
        since a change in place keeps the identity these guards check."""
        return [(label, v) for label, v in zip(self._labels, self._seen) if liftable(v)]

    def _read(self) -> list:
        """The values bound now, read by C loops where it can (this runs on every call)."""
        values: list = []
        for g, names, get_all in self._reads:
            try:
                got = get_all(g)
            except KeyError:                    # a name deleted
                values += map(g.get, names, repeat(MISSING))
                continue
            if len(names) == 1:
                values.append(got)
            else:
                values += got
        if self._cell_list:
            try:
                values += map(_CONTENTS, self._cell_list)
            except ValueError:                  # a cell not assigned yet
                values += map(cell_value, self._cell_list)
        return values

    def settle(self) -> None:
        """After the trace (the guards were made before it): take as they are now the values
        the traced code wrote itself (``global n; n += 1``, ``self.calls += 1``); any other
        value that changed meanwhile (another thread's ``scale = 3``) keeps its value from
        before the trace, which may or may not be the one baked in, so the next call traces
        again."""
        for i, v in enumerate(self._read()):
            if v is not self._seen[i] and (self._names[i] in self._written
                                           or self._labels[i] in self._written):
                self._seen[i] = v
                self._prints[i] = _fingerprint(v)
        self._structures()     # (a forward that sets a static attribute: as it is now)

    def changed(self, swappable=None) -> list[tuple[str, str]] | None:
        """(name, "old -> new") for each guarded value that changed since the last check (and
        remember the new ones), or None. ``swappable(old, new)``: whether an array rebound to
        ``new`` can be passed in ``old``'s place instead (``W = W - lr * dW``: no trace
        again); those go to ``swaps`` ({id(old): new}) for the caller to pass."""
        now = self._read()
        seen = self._seen
        out = [(label, "its static structure changed (train()/eval(), a setting such as "
                "Dropout's p)") for label in self._structures()] if self._trees else []
        out = out or None
        if all(map(is_, now, seen)):
            return out
        for i, v in enumerate(now):
            if v is seen[i]:
                continue
            fp = _fingerprint(v)
            if fp != self._prints[i]:
                if swappable is not None and swappable(seen[i], v):
                    self.swaps[id(seen[i])] = v
                else:
                    out = out or []
                    out.append((self._labels[i], _change(seen[i], v)))
                self._prints[i] = fp
            seen[i] = v
        return out


class ArrayContents:
    """The small arrays traces left constants because Python code read their values (``if
    FLAGS[0]:``; tracer/external_arrays.py lifts the others), compared byte for byte with
    their traced contents at every call: one changed in place traces again."""

    def __init__(self):
        self._held: list = []            # (label, array, its bytes when traced)

    def __bool__(self) -> bool:
        return bool(self._held)

    def add(self, constant_arrays: list) -> None:
        self._held += constant_arrays

    def changed(self) -> list[tuple[str, str]] | None:
        out = [(label, "changed in place") for label, a, traced in self._held
               if a.tobytes() != traced]
        if not out:
            return None
        self._held = []                  # every trace is forgotten
        return out


class ReachedArrays:
    """The arrays traces took through attributes and containers (``model.layers[i].W`` of a
    global model, a static argument's, a jitted method's ``self``'s: Traced.reached), read
    again by their paths at every call (external_arrays.resolve), since rebinding one
    (``layer.W = layer.W - lr * dW``) keeps every identity the guards check. One rebound to
    an array of the same type, dtype and shape is passed in its place (``moved``'s swaps: no
    trace again); any other change (another shape, a layer appended to the list the code
    iterates, one the trace left a constant, two paths to one array now apart) traces
    again."""

    def __init__(self):
        self._held: list = []            # [array, label, paths, is a parameter]

    def __bool__(self) -> bool:
        return bool(self._held)

    def add(self, reached: list) -> None:
        self._held += [[a, label, paths, param] for label, a, paths, param in reached]

    def follows(self, old, new) -> bool:
        """Whether every path that held ``old`` holds ``new`` now (a guarded attribute the
        code names, rebound, is reached by its path too)."""
        return all(resolve(p) is new for rec in self._held if rec[0] is old for p in rec[2])

    def rebound(self, swaps: dict) -> None:
        """The guards passed ``swaps[id(old)]`` in ``old``'s place: held as the new one."""
        for rec in self._held:
            rec[0] = swaps.get(id(rec[0]), rec[0])

    def any_moved(self) -> bool:
        return any(resolve(p) is not rec[0] for rec in self._held for p in rec[2])

    def moved(self):
        """None if every path holds its array still; else (swaps: {id(old): new}, changes:
        [(label, why)] that must trace again), the swapped ones remembered."""
        if not self.any_moved():
            return None
        swaps: dict = {}
        changes: list = []
        for rec in self._held:
            old, label, paths, param = rec
            now = [resolve(p) for p in paths]
            if all(v is old for v in now):
                continue
            new = now[0]
            if not param or any(v is not new for v in now) or not same_kind(old, new) \
                    or swaps.get(id(old), new) is not new:
                changes.append((label, "defined" if old is MISSING else
                                "deleted" if new is MISSING else
                                f"rebound to another {type(new).__name__}"
                                + (f" of shape {new.shape}" if isinstance(new, np.ndarray)
                                   else "")))
                continue
            swaps[id(old)] = new
        for rec in self._held:
            # one array two traces (or the same one after a swap) took by different paths,
            # now apart: the programs cannot tell them apart
            if id(rec[0]) in swaps and any(resolve(p) is not swaps[id(rec[0])]
                                           for p in rec[2]):
                changes.append((rec[1], "rebound, apart from another path to the array"))
        if changes:
            return {}, changes
        for rec in self._held:
            if id(rec[0]) in swaps:
                rec[0] = swaps[id(rec[0])]
        return swaps, []


def same_kind(old, new) -> bool:
    """``new`` can be passed where the program takes ``old``."""
    return (liftable(new) and type(new) is type(old) and new.dtype == old.dtype
            and new.shape == old.shape
            and (new.flags.c_contiguous or not old.flags.c_contiguous))


def reached_moved(reached: list) -> bool:
    """Whether an array of ``Traced.reached`` is no longer where the trace found it."""
    return any(resolve(p) is not a for _, a, paths, _ in reached for p in paths)


def contents_changed(constant_arrays: list) -> bool:
    return any(a.tobytes() != traced for _, a, traced in constant_arrays)


class _Collector:
    """Walks a function and the user's functions it reaches, collecting what to guard."""

    def __init__(self):
        self.globals: dict = {}          # id(globals dict) -> (the dict, [(name, label)])
        self.cells: list = []            # (cell, label)
        self._attributes: set = set()   # (id(an object's __dict__), name) guarded
        self.written: set = set()        # names stored as globals, attributes, nonlocals
        self.visited: set = set()

    def visit(self, fn, depth: int) -> None:
        if depth == 0:
            # jit(obj.method), jit(callable_obj): what the method reads from self is guarded
            if isinstance(fn, types.MethodType) and not isinstance(fn.__self__, type):
                self._attribute(fn.__self__, "self", (fn.__func__.__name__,))
                self.self_chains(fn.__func__, fn.__self__, 0)
            elif callable(fn) and not isinstance(fn, (types.FunctionType, type)) and \
                    isinstance(inspect.getattr_static(type(fn), "__call__", None),
                               types.FunctionType):
                self._attribute(fn, "self", ("__call__",))
        fn = _python_function(fn)
        if fn is None or id(fn) in self.visited or depth > MAX_DEPTH \
                or len(self.visited) >= MAX_FUNCTIONS:
            return
        self.visited.add(id(fn))
        code = fn.__code__
        internal = is_library(code.co_filename)
        # A library's or tracejit's own function (grad's wrapper) is only a way through to
        # the user's functions it holds: its closure is followed, its values not guarded, and
        # it is no level of depth (as in external_arrays.Shadows): grad(loss)'s helpers are
        # guarded as jit(loss)'s are.
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            v = cell_value(cell)
            if internal:
                self.visit(v, depth)
            elif not isinstance(v, types.ModuleType):
                self.cells.append((cell, f"{name} (a variable {fn.__name__} closes over)"))
                self.visit(v, depth + 1)
        if internal:
            return
        self.written |= stored_names(code, _WRITES)
        g = fn.__globals__
        for name in sorted(global_names(code)):
            if name in g and not isinstance(g[name], types.ModuleType):
                self.globals.setdefault(id(g), (g, []))[1].append((name, f"global {name}"))
                self.visit(g[name], depth + 1)
        cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
        for kind, root, attrs in sorted(chains(code)):
            value = (g.get(root, MISSING) if kind == "global" else
                     cell_value(cells[root]) if root in cells else MISSING)
            if value is not MISSING and guardable_root(value):
                self._attribute(value, root, attrs)
        for kind, root, k in sorted(subscripts(code), key=repr):
            d = (g.get(root, MISSING) if kind == "global" else
                 cell_value(cells[root]) if root in cells else MISSING)
            if type(d) is dict and k in d and (id(d), k) not in self._attributes \
                    and len(self._attributes) < MAX_READS:
                # (a plain dict only: a defaultdict's lookup could insert the key.) The
                # traced code may store into it (stats["n"] += 1): taken as it is after
                # the trace, as a global the code writes (settle)
                self._attributes.add((id(d), k))
                label = f"{root}[{k!r}]"
                self.written.add(label)
                self.globals.setdefault(id(d), (d, []))[1].append((k, label))

    def self_chains(self, fn, obj, first: int = 1) -> None:
        """What a method reads through the attributes of its ``self``, ``obj`` (``self.opt.lr``,
        and ``self.lr`` inside ``self.opt.update``): ``self.opt`` itself is part of the cache
        key (methods.py), or guarded, but a change of the object it holds was not seen. The
        first ``first`` attributes of each chain are left out (the key holds them)."""
        fn = _python_function(fn)
        if fn is None or not fn.__code__.co_argcount or is_library(fn.__code__.co_filename):
            return
        me = fn.__code__.co_varnames[0]
        for kind, root, attrs in sorted(chains(fn.__code__, me)):
            if kind == "self" and len(attrs) > first:
                self._attribute(obj, "self", attrs)

    def _attribute(self, root_value, root: str, attrs: tuple) -> None:
        """Guard ``root.attrs`` if the object holds it (for a method called on the object,
        the attributes the method reads from ``self``): read from the ``__dict__`` of the
        object that holds it now, as a global from its module's. Every shorter chain is
        guarded too (``chains`` gives each prefix), so a rebound ``root`` or ``root.a`` is
        seen before a stale ``__dict__`` could mislead."""
        owner = read_chain(root_value, attrs[:-1])
        if owner is MISSING:
            return
        names = [attrs[-1]]
        if own_attribute(owner, attrs[-1]) is MISSING and not isinstance(owner, type):
            names = sorted(self_attributes(type(owner), attrs[-1]))
        try:
            d = object.__getattribute__(owner, "__dict__")
        except AttributeError:           # an array's method (W.sum()): no attributes to guard
            return
        if not isinstance(d, (dict, types.MappingProxyType)):
            return
        for name in names:
            key = (id(d), name)
            if key in self._attributes or len(self._attributes) >= MAX_READS \
                    or own_attribute(owner, name) is MISSING:
                continue
            self._attributes.add(key)
            label = ".".join((root,) + attrs[:-1] + (name,))
            self.globals.setdefault(id(d), (d, []))[1].append((name, label))


def _structured(v) -> bool:
    """Whether ``v`` is a registered pytree node (an nn.Module), or a small list, tuple or
    dict holding one: its static structure is guarded too (Guards._structures)."""
    items = (v.values() if type(v) is dict else v if type(v) in (list, tuple) else (v,))
    return len(items) <= REACH_ITEMS and any(map(is_registered_node, items))


def _python_function(obj):
    """The Python function behind ``obj`` (a function, a jitted or transformed one), or
    None."""
    for _ in range(4):
        if isinstance(obj, types.FunctionType):
            return obj
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
            continue
        if isinstance(obj, type):
            return None
        if isinstance(obj, functools.partial):
            obj = obj.func
            continue
        try:            # any object: its __getattr__ may do anything, or raise
            inner = getattr(obj, "__wrapped__", None)
            if inner is None and type(obj).__name__ == "JittedFunction":
                inner = obj.fn
        except Exception:                                          # noqa: BLE001
            return None
        if inner is None:
            # a callable instance: the code that runs is its class's __call__
            call = getattr(type(obj), "__call__", None)
            return call if isinstance(call, types.FunctionType) else None
        obj = inner
    return None


def _fingerprint(v):
    """What a change is judged by: the value of a scalar (floats by their bits: -0.0 is not
    0.0, and NaN is NaN), the identity of anything else."""
    if isinstance(v, _SCALARS):
        if isinstance(v, float):
            return (float, v.hex())
        if isinstance(v, complex):
            return (complex, v.real.hex(), v.imag.hex())
        if isinstance(v, np.generic):
            return (type(v), v.tobytes())
        return (type(v), v)
    return ("id", id(v))


def _change(old, new) -> str:
    if isinstance(old, _SCALARS) and isinstance(new, _SCALARS):
        return f"{old!r} -> {new!r}"
    if old is MISSING or new is MISSING:
        return "defined" if old is MISSING else "deleted"
    if isinstance(old, _SCALARS) or isinstance(new, _SCALARS):
        return f"{_short(old)} -> {_short(new)}"
    return f"rebound to another {type(new).__name__}"


def _short(v) -> str:
    return repr(v) if isinstance(v, _SCALARS) else f"a {type(v).__name__}"
