"""What a jitted function did to the dicts and lists among its arguments, done again to the
caller's after every call.

Eagerly, ``state["m"] = v``, ``del d["y"]`` or ``l.append(x)`` change the caller's
containers. A trace runs the function once per signature, on copies of them (``unflatten``
builds new dicts and lists holding tracers), and later calls run only the program. So, as
torch.compile replays side effects on Python containers, the trace records what became of each
container and every call does it to the caller's:

- ``snapshot`` (before the function runs) keeps each node of the arguments and its children;
- ``record`` (after it ran) compares each node with its snapshot. A changed dict or list is
  described by its new entries, each a *recipe*: the caller's own object from that call (an
  argument's leaf or container: the same object, as eagerly), a value known when tracing (a
  Python number, a string, None), a new container of recipes, or a value that the program
  computes (a new traced value, or an array constant: the program returns it, so each call
  hands the caller a fresh array, as for the arguments it writes into);
- ``ContainerWrites.apply`` (after each call) finds the caller's containers (numbered as the
  snapshot's, since the caller's arguments have the trace's structure), resolves every recipe
  before changing anything (a recipe may name a container that changes too), then changes
  them: a dict's removed, stored and appended keys, a list's items.

A trace's dicts start in sorted key order (pytree.py), not the caller's. So keys that kept
their places keep the caller's order, and the others go last, in the trace's order: a key
removed and stored again moves to the end as eagerly, unless no key after it stayed (the two
cannot be told apart then, and it keeps its place).

Where no faithful replay exists, tracing stops with an error: the attributes of a registered
node (a Module) changed, or something jit cannot hand back was stored into a container.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import unsupported
from .numpy.lifting import lift
from .pytree import STATIC_TYPES, TreeDef, build_node, child_setter, node_of, nodes
from .tracer import Tracer

_PYTHON_NUMBERS = (bool, int, float, complex)


@dataclass
class Snapshot:
    """The nodes of a trace's arguments as the function got them (kept alive, so that their
    ids cannot be taken by objects the function makes)."""
    nodes: list            # (object, kind, aux, children, path) per node; a dict's: a copy
    number: dict           # id(object) -> its number


def snapshot(tree, treedef: TreeDef) -> Snapshot:
    found = [(obj, kind, aux, dict(obj) if kind is dict else children, path)
             for obj, kind, aux, children, path in nodes(tree, treedef)]
    return Snapshot(found, {id(n[0]): i for i, n in enumerate(found)})


def _is_tuple(kind) -> bool:
    return kind is tuple or (isinstance(kind, type) and issubclass(kind, tuple))


def _same(a, b) -> bool:
    """Whether a child is still what it was: the same object, or an equal static value (a
    string stored again, ``d["mode"] = mode.lower()``, changes nothing, as in the cache key)."""
    return a is b or (isinstance(a, STATIC_TYPES) and type(a) is type(b) and a == b)


def _changed(node) -> bool:
    obj, kind, aux, before, _ = node
    if kind is dict:
        return len(obj) != len(before) or not all(
            k0 == k1 and _same(v0, v1) for (k0, v0), (k1, v1) in zip(before.items(), obj.items()))
    if kind is list:
        return len(obj) != len(before) or not all(map(_same, before, obj))
    if _is_tuple(kind):
        return False
    _, aux_now, children, _ = node_of(obj)
    return aux_now != aux or len(children) != len(before) or not all(
        map(_same, before, children))


def first_change(snap: Snapshot, rename) -> str | None:
    """What the function did to the first argument container that it changed, said as
    "a function that ..." continues (for the refusal under grad), or None."""
    for node in snap.nodes:
        if not _changed(node):
            continue
        obj, kind, _, before, path = node
        name = rename(path)
        if kind is dict and list(obj) == list(before):
            key = next(k for k in obj if not _same(before[k], obj[k]))
            return f"stores a new value into its argument {name}[{key!r}]"
        if kind is list and len(obj) == len(before):
            i = next(i for i, (a, b) in enumerate(zip(before, obj)) if not _same(a, b))
            return f"stores a new value into its argument {name}[{i}]"
        if kind in (dict, list):
            return (f"adds, removes or reorders entries of its argument {name} (d[k] = v for "
                    "a new key, d.pop(k), l.append(v), ...)")
        return f"changes the attributes of its argument {name}"
    return None


@dataclass(frozen=True)
class ContainerWrites:
    """How a call changes the caller's containers (see the module docstring).

    ``changes``, registered nodes first (their setters number children as the caller's node
    has them now): ``("set", node, [(i, recipe)])``, children of a node that can store them (a
    method's ``self``); ``("dict", node, removed keys, [(key, recipe)] stored in place,
    [(key, recipe)] put last)``; ``("list", node, [recipe])``, all of a list's items.
    ``new``: ``(kind, aux, [recipe])`` of each container the function made (a new dict's aux:
    its keys, in its order). ``weak``: per value the program computes for these, whether it
    stands for a Python number. A recipe is ``("leaf", i)`` (argument leaf i), ``("node", n)``
    (argument node n), ``("value", v)``, ``("new", n)`` or ``("out", k)`` (computed value k)."""
    changes: tuple
    new: tuple
    weak: tuple
    names: tuple           # the changed containers' names, for errors at the call

    @property
    def n_values(self) -> int:
        return len(self.weak)

    def apply(self, tree, leaves, values) -> None:
        """Change the caller's containers in ``tree`` (its flat leaves: ``leaves``) as the
        function changed the trace's; ``values``: the program's results for them."""
        caller = [node[0] for node in nodes(tree)]
        targets = [caller[change[1]] for change in self.changes]
        if len({id(t) for t in targets}) < len(targets):
            names = [n for n, t in zip(self.names, targets)
                     if sum(u is t for u in targets) > 1]
            raise ValueError(
                f"the jitted function changes its arguments {' and '.join(names)}, which are "
                "one object in the caller; tracejit traced them as separate containers, so the "
                "result could differ from Python's. Pass a copy of one of them.")
        computed = [_as_eagerly(v, weak) for v, weak in zip(values, self.weak)]
        built: dict = {}

        def resolve(recipe):
            tag, x = recipe
            if tag == "leaf":
                return leaves[x]
            if tag == "node":
                return caller[x]
            if tag == "out":
                return computed[x]
            if tag == "value":
                return x
            if x not in built:        # one object wherever the function stored it, as eagerly
                kind, aux, recipes = self.new[x]
                children = [resolve(r) for r in recipes]
                built[x] = (dict(zip(aux, children)) if kind is dict
                            else build_node(kind, aux, children))
            return built[x]

        # Every recipe first: one may name a caller's container that a change below alters.
        done = []
        for change, target in zip(self.changes, targets):
            tag, entries = change[0], change[2:]
            if tag == "dict":
                removed, stored, last = entries
                entries = (removed, [(k, resolve(r)) for k, r in stored],
                           [(k, resolve(r)) for k, r in last])
            elif tag == "set":
                entries = [(i, resolve(r)) for i, r in entries[0]]
            else:
                entries = [resolve(r) for r in entries[0]]
            done.append((tag, target, entries))
        for tag, target, entries in done:
            if tag == "set":
                setter = child_setter(type(target))
                for i, value in entries:
                    setter(target, i, value)
            elif tag == "list":
                target[:] = entries
            else:
                removed, stored, last = entries
                for k in removed:
                    del target[k]
                for k, value in stored:
                    target[k] = value
                for k, value in last:
                    target.pop(k, None)
                    target[k] = value


def _as_eagerly(value, weak: bool):
    """A computed value as the caller would hold it eagerly: an array, a 0-d one as a NumPy
    scalar (what NumPy's operations give), and a Python number where the function computed
    it from Python numbers only (a weak value: ``d["lr"] = d["lr"] * 0.5``)."""
    if value.ndim != 0:
        return value
    value = value[()]
    return value.item() if weak else value


def record(snap: Snapshot, tracers: list, trace, rename) -> tuple[ContainerWrites | None,
                                                                   list[Tracer]]:
    """After the function ran: how to change the caller's containers as it changed the
    trace's (None if it changed none), and the traced values the program must return for
    that, after its other results. Raises where no faithful replay exists."""
    rec = _Recorder(snap, tracers, trace)
    changes, names = [], []
    for number, node in enumerate(snap.nodes):
        if _changed(node):
            changes.append(rec.change(number, node, rename(node[4])))
            names.append(rename(node[4]))
    if not changes:
        return None, []
    order = sorted(range(len(changes)), key=lambda i: changes[i][0] != "set")
    writes = ContainerWrites(tuple(changes[i] for i in order), tuple(rec.new),
                             tuple(rec.weak), tuple(names[i] for i in order))
    return writes, rec.values


class _Recorder:
    def __init__(self, snap: Snapshot, tracers: list, trace):
        self.snap = snap
        self.leaf = {id(t): i for i, t in enumerate(tracers)}
        self.trace = trace
        self.values: list[Tracer] = []     # what the program computes for the containers
        self.weak: list[bool] = []
        self.computed: dict = {}           # id(object) -> its index in values
        self.new: list = []                # (kind, aux, [recipe]) per new container
        self.new_number: dict = {}         # id(container) -> its index in new
        self.building: set = set()

    def change(self, number: int, node, name: str) -> tuple:
        obj, kind, aux, before, _ = node
        if kind is list:
            return ("list", number, [self.recipe(v, f"{name}[{i}]") for i, v in enumerate(obj)])
        if kind is dict:
            return ("dict", number, *self.dict_change(obj, before, name))
        _, aux_now, children, keys = node_of(obj)
        if aux_now == aux and child_setter(kind) is not None:
            return ("set", number, [(i, self.recipe(v, name + key)) for i, (v, old, key)
                                    in enumerate(zip(children, before, keys))
                                    if not _same(old, v)])
        made = next((f" The new value of {name}{key} was made at {v._loc.describe()}"
                     for v, key in zip(children, keys) if isinstance(v, Tracer) and v._loc
                     and not any(v is old for old in before)), "")
        if child_setter(kind) is not None:       # a jitted method's self
            raise unsupported(
                f"adding attributes to {name}, or storing into one that is not an array (those "
                "are static: part of the signature), in a jitted method",
                f"create each array attribute before the first call ({name}.h = np.zeros(...)); "
                "return other new values and set them outside the jitted method." + made)
        raise unsupported(
            f"changing the attributes of the argument {name}, a "
            f"{getattr(kind, '__name__', kind)}, in a jitted function (jit writes back what "
            "the function does to the dicts and lists among its arguments, not to other "
            "objects)",
            f"return the new values and set them outside the jitted function (`loss, w = "
            f"step({name}, x)`, then `{name}.w = w`)." + made)

    def dict_change(self, obj: dict, before: dict, name: str) -> tuple:
        """(removed keys, stored in place, put last): see the module docstring on order."""
        place = {k: i for i, k in enumerate(before)}
        kept, stored, last = -1, [], []
        for k, v in obj.items():
            i = place.get(k)
            if not last and i is not None and i > kept:
                kept = i
                if not _same(before[k], v):
                    stored.append((k, self.recipe(v, f"{name}[{k!r}]")))
            else:
                last.append((k, self.recipe(v, f"{name}[{k!r}]")))
        return tuple(k for k in before if k not in obj), stored, last

    def recipe(self, obj, where: str) -> tuple:
        number = self.snap.number.get(id(obj))
        if number is not None:
            return ("node", number)
        if isinstance(obj, Tracer):
            i = self.leaf.get(id(obj))
            return ("leaf", i) if i is not None else self.computed_value(obj, obj._weak)
        if obj is None or isinstance(obj, STATIC_TYPES) or (
                isinstance(obj, _PYTHON_NUMBERS) and not isinstance(obj, np.generic)):
            return ("value", obj)             # immutable: stored by value, as eagerly
        if isinstance(obj, (np.ndarray, np.generic)):
            return self.computed_value(obj, False)    # a fresh copy each call
        node = node_of(obj)
        if node is None:
            raise unsupported(
                f"storing a {type(obj).__name__} into the argument {where} of a jitted "
                "function",
                "jit writes back arrays, Python numbers, strings, None and tuples, lists and "
                "dicts of them into the caller's containers; store other objects outside the "
                "jitted function.")
        return self.new_container(obj, node, where)

    def computed_value(self, obj, weak: bool) -> tuple:
        k = self.computed.get(id(obj))
        if k is None:
            k = self.computed[id(obj)] = len(self.values)
            self.values.append(lift(obj, self.trace))
            self.weak.append(weak)
        return ("out", k)

    def new_container(self, obj, node, where: str) -> tuple:
        n = self.new_number.get(id(obj))
        if n is not None:
            return ("new", n)
        if id(obj) in self.building:
            raise unsupported(f"a container that holds itself, stored into the argument "
                              f"{where} of a jitted function",
                              "store it outside the jitted function.")
        self.building.add(id(obj))
        kind, aux, children, keys = node
        if kind is dict:                      # its own order, not flatten's
            aux, children, keys = tuple(obj), list(obj.values()), [f"[{k!r}]" for k in obj]
        recipes = [self.recipe(c, where + key) for c, key in zip(children, keys)]
        self.building.discard(id(obj))
        n = self.new_number[id(obj)] = len(self.new)
        self.new.append((kind, aux, recipes))
        return ("new", n)
