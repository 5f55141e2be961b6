"""Pytrees: nested tuples, lists, dicts and None (and registered classes) holding array leaves.

Dict keys are sorted, as in JAX, so the structure does not depend on insertion order.
Strings, bytes and enum members are static values, not leaves: part of the structure (so of
jit's cache key) by value, handed to the function as themselves, as torch.compile treats them:
code branches on ``params["mode"] == "train"`` in Python, and a tracer there could not.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

_NODES: dict[type, tuple[Callable, Callable]] = {}
# For nodes whose unflatten builds an object of another type (a jitted method's ``self``):
# wrap(obj) -> the node again, and set_child(node, i, value), which stores child i into the
# caller's object (how stores into it reach the caller; see container_writes.py).
_WRAP: dict[type, Callable] = {}
_SET_CHILD: dict[type, Callable] = {}
# Registered kinds (nn.Module) whose subtree holds an array once however often it appears in
# it: PyTorch's tied weights (``head.weight = emb.weight``) are one parameter, one leaf, so
# their gradient sums both uses and an optimizer step keeps them one array. Its second
# appearance is a TreeDef("tied", i) naming leaf i of the outermost such node's subtree.
_SHARES_LEAVES: set[type] = set()
# Registered kinds holding some children as state rather than trained values (an nn.Module's
# buffers: running statistics): state(node) -> the indices of those children. ``grad`` gives
# their leaves no gradient (zeros) and may let the function write into them (state_leaves).
_STATE: dict[type, Callable] = {}
# Static values (see above); their node is TreeDef("static", (type, value), ()). The type is
# kept so that values equal across types (an IntEnum member and another's) stay apart.
STATIC_TYPES = (str, bytes, enum.Enum)


# How many times a registered node's static structure changed in place (nn.Module's train(),
# eval(), a setting assigned): jit's guards on the models a function reads from its globals
# compare their structures again only when this moved (driver/guards.py)
_STATIC_CHANGES = [0]


def note_static_change() -> None:
    _STATIC_CHANGES[0] += 1


def static_changes() -> int:
    return _STATIC_CHANGES[0]


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable,
                         wrap: Callable | None = None, set_child: Callable | None = None,
                         shares_leaves: bool = False, state: Callable | None = None) -> None:
    """flatten(obj) -> (children, aux); unflatten(aux, children) -> obj. aux must be hashable.
    ``shares_leaves``: an array found twice in the node's subtree (the same object) is one
    leaf, and unflatten puts the one value in both places. ``state(obj)``: the indices of the
    children that are state, not trained (see ``state_leaves``)."""
    _NODES[cls] = (flatten, unflatten)
    if state is not None:
        _STATE[cls] = state
    if shares_leaves:
        _SHARES_LEAVES.add(cls)
    else:
        _SHARES_LEAVES.discard(cls)
    if wrap is not None:
        _WRAP[cls] = wrap
    if set_child is not None:
        _SET_CHILD[cls] = set_child


@dataclass(frozen=True)
class TreeDef:
    kind: Any             # "leaf", "none", "static", "tied", tuple, list, dict, a namedtuple
                          # or registered class
    aux: Any              # dict keys, (type, value) of a static, a registered class's aux,
                          # or the index of a tied leaf's first appearance (_SHARES_LEAVES)
    children: tuple["TreeDef", ...]

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __str__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        if self.kind == "tied":
            return f"=*{self.aux}"
        if self.kind == "static":
            return repr(self.aux[1])
        inner = ", ".join(str(c) for c in self.children)
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.aux, self.children)) + "}"
        if self.kind is list:
            return f"[{inner}]"
        if self.kind is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        return f"{getattr(self.kind, '__name__', self.kind)}({inner})"


LEAF = TreeDef("leaf", None, ())


def _children(obj):
    """(kind, aux, children, child key names) for a node, or None for a leaf."""
    if obj is None:
        return "none", None, [], []
    t = type(obj)
    if t in _NODES:
        flat = _NODES[t][0](obj)      # (children, aux) or (children, aux, child key names)
        children = list(flat[0])
        keys = list(flat[2]) if len(flat) > 2 else [f".{i}" for i in range(len(children))]
        return t, flat[1], children, keys
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return t, None, list(obj), [f".{f}" for f in obj._fields]
    if t is tuple or t is list:
        return t, None, list(obj), [f"[{i}]" for i in range(len(obj))]
    if t is dict:
        keys = _sorted_keys(obj)
        return dict, tuple(keys), [obj[k] for k in keys], [f"[{k!r}]" for k in keys]
    if isinstance(obj, STATIC_TYPES):
        return "static", (t, obj), [], []
    return None


def _sorted_keys(d: dict) -> list:
    """The keys in order; keys that do not compare with each other ({1: a, "a": b}: NumPy
    code mixes them rarely, but the error came from deep inside) by type name, then value."""
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=lambda k: (type(k).__name__, repr(k)))


def flatten(tree, path: str = "") -> tuple[list, TreeDef]:
    leaves, paths = [], []
    treedef = _flatten(tree, leaves, paths, path)
    return leaves, treedef


def flatten_with_paths(tree, path: str = "") -> tuple[list, list[str], TreeDef]:
    leaves, paths = [], []
    treedef = _flatten(tree, leaves, paths, path)
    return leaves, paths, treedef


def state_leaves(tree) -> frozenset:
    """The positions, in flatten's order, of the leaves that registered nodes hold as state
    (an nn.Module's buffers): model state that is no parameter. ``grad`` gives them zeros
    and lets the function write into them (BatchNorm's running statistics); an optimizer
    should leave them as they are."""
    if not _STATE:
        return frozenset()
    out: set = set()
    _flatten(tree, [], [], "", None, out)
    return frozenset(out)


def state_children(obj) -> list:
    """The children a registered node holds as state (its buffers), else []."""
    held = _STATE.get(type(obj))
    if held is None:
        return []
    children = _children(obj)[2]
    return [children[i] for i in held(obj)]


def _flatten(obj, leaves, paths, path, shared=None, state=None):
    node = _children(obj)
    if node is None:
        if shared is not None and _is_shareable(obj):
            first, seen = shared
            i = seen.get(id(obj))
            if i is not None:
                return TreeDef("tied", i, ())
            seen[id(obj)] = len(leaves) - first
        leaves.append(obj)
        paths.append(path)
        return LEAF
    kind, aux, children, keys = node
    if shared is None and kind in _SHARES_LEAVES:
        shared = (len(leaves), {})
    if state is None:
        return TreeDef(kind, aux, tuple(_flatten(c, leaves, paths, path + k, shared)
                                        for c, k in zip(children, keys)))
    held = _STATE[kind](obj) if kind in _STATE else ()
    defs = []
    for i, (c, k) in enumerate(zip(children, keys)):
        start = len(leaves)
        defs.append(_flatten(c, leaves, paths, path + k, shared, state))
        if i in held:
            state.update(range(start, len(leaves)))
    return TreeDef(kind, aux, tuple(defs))


_ARRAY_TYPES: tuple = ()


def _is_shareable(obj) -> bool:
    """An array (not a Python or NumPy number, which Python may intern)."""
    global _ARRAY_TYPES
    if not _ARRAY_TYPES:
        from .tracer import Tracer     # (imported late: tracer.py sits above this module)
        _ARRAY_TYPES = (np.ndarray, Tracer)
    return isinstance(obj, _ARRAY_TYPES)


def unflatten(treedef: TreeDef, leaves) -> Any:
    it = iter(leaves)
    out = _unflatten(treedef, it)
    return out


def _unflatten(td: TreeDef, it, shared=None):
    if td.kind == "leaf":
        leaf = next(it)
        if shared is not None:
            made, ids = shared
            if _is_shareable(leaf):
                # One array given for two leaves that are not tied (grad's cotangent of
                # ``a + b``, the same for a and b) becomes two: tied, they would flatten to
                # fewer leaves than the structure has.
                if id(leaf) in ids:
                    leaf = leaf.copy()
                ids.add(id(leaf))
            made.append(leaf)
        return leaf
    if td.kind == "tied":
        return shared[0][td.aux]
    if td.kind == "none":
        return None
    if td.kind == "static":
        return td.aux[1]
    if shared is None and td.kind in _SHARES_LEAVES:
        shared = ([], set())
    children = [_unflatten(c, it, shared) for c in td.children]
    if td.kind is dict:
        return dict(zip(td.aux, children))
    if td.kind is tuple or td.kind is list:
        return td.kind(children)
    if td.kind in _NODES:
        return _NODES[td.kind][1](td.aux, children)
    return td.kind(*children)  # namedtuple


def is_registered_node(obj) -> bool:
    """Whether ``obj`` is an object of a registered class (an nn.Module): a node whose static
    structure (``training``, a Dropout's ``p``) can change in place."""
    return type(obj) in _NODES


def node_of(obj):
    """What flatten sees in ``obj``: ``(kind, aux, children, child key names)`` for a node,
    with kind "none" or "static" for None and static values; None for a leaf."""
    return _children(obj)


def nodes(tree, treedef: TreeDef | None = None) -> list[tuple]:
    """``(object, kind, aux, children, path)`` of every node of ``tree`` that holds children
    (not None or static values), parents first, in flatten's order. Two trees of one
    structure number their nodes alike: how jit finds the caller's container that a trace's
    copy of it stood for (container_writes.py). Given the ``treedef`` that ``tree`` was
    unflattened from, objects that registered nodes unflattened into (a method's ``self``)
    are wrapped into the node again."""
    out = []

    def walk(obj, td, path: str) -> None:
        if td is not None and td.kind in _WRAP and type(obj) is not td.kind:
            obj = _WRAP[td.kind](obj)
        node = _children(obj)
        if node is None or node[0] in ("none", "static"):
            return
        kind, aux, children, keys = node
        out.append((obj, kind, aux, children, path))
        tds = td.children if td is not None else (None,) * len(children)
        for child, child_td, key in zip(children, tds, keys):
            walk(child, child_td, path + key)

    walk(tree, treedef, "")
    return out


def child_setter(kind) -> Callable | None:
    """``set_child(node, i, value)`` of a registered node kind that can store a child into the
    caller's object (a jitted method's ``self``), or None."""
    return _SET_CHILD.get(kind)


def build_node(kind, aux, children: list):
    """A node of ``kind`` (a tuple, namedtuple or registered class) holding ``children``, as
    unflatten builds it."""
    return _unflatten(TreeDef(kind, aux, (LEAF,) * len(children)), iter(children))


def tree_map(f, tree, *rest):
    leaves, td = flatten(tree)
    others = [flatten(r)[0] for r in rest]
    return unflatten(td, [f(x, *xs) for x, *xs in zip(leaves, *others)])
