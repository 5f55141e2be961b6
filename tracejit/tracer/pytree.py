"""Pytrees: nested tuples, lists, dicts and None (and registered classes) holding array leaves.

Dict keys are sorted, as in JAX, so the structure does not depend on insertion order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

_NODES: dict[type, tuple[Callable, Callable]] = {}
# For nodes whose unflatten builds an object of another type (a jitted method's ``self``):
# wrap(obj) -> the node again, and set_child(node, i, value), which stores child i into the
# caller's object (how stores into it reach the caller; see trace_function.py).
_WRAP: dict[type, Callable] = {}
_SET_CHILD: dict[type, Callable] = {}


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable,
                         wrap: Callable | None = None, set_child: Callable | None = None
                         ) -> None:
    """flatten(obj) -> (children, aux); unflatten(aux, children) -> obj. aux must be hashable."""
    _NODES[cls] = (flatten, unflatten)
    if wrap is not None:
        _WRAP[cls] = wrap
    if set_child is not None:
        _SET_CHILD[cls] = set_child


@dataclass(frozen=True)
class TreeDef:
    kind: Any             # "leaf", "none", tuple, list, dict, a namedtuple or registered class
    aux: Any              # dict keys, namedtuple type, or the registered class's aux data
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
        keys = sorted(obj)
        return dict, tuple(keys), [obj[k] for k in keys], [f"[{k!r}]" for k in keys]
    return None


def flatten(tree, path: str = "") -> tuple[list, TreeDef]:
    leaves, paths = [], []
    treedef = _flatten(tree, leaves, paths, path)
    return leaves, treedef


def flatten_with_paths(tree, path: str = "") -> tuple[list, list[str], TreeDef]:
    leaves, paths = [], []
    treedef = _flatten(tree, leaves, paths, path)
    return leaves, paths, treedef


def _flatten(obj, leaves, paths, path):
    node = _children(obj)
    if node is None:
        leaves.append(obj)
        paths.append(path)
        return LEAF
    kind, aux, children, keys = node
    return TreeDef(kind, aux, tuple(_flatten(c, leaves, paths, path + k)
                                    for c, k in zip(children, keys)))


def unflatten(treedef: TreeDef, leaves) -> Any:
    it = iter(leaves)
    out = _unflatten(treedef, it)
    return out


def _unflatten(td: TreeDef, it):
    if td.kind == "leaf":
        return next(it)
    if td.kind == "none":
        return None
    children = [_unflatten(c, it) for c in td.children]
    if td.kind is dict:
        return dict(zip(td.aux, children))
    if td.kind is tuple or td.kind is list:
        return td.kind(children)
    if td.kind in _NODES:
        return _NODES[td.kind][1](td.aux, children)
    return td.kind(*children)  # namedtuple


def set_leaves(tree, values: dict) -> None:
    """Put ``values[i]`` in place of leaf number ``i`` (in flatten's order) in the dict, list or
    registered node holding it: how a jitted function's stores into its arguments' containers
    reach the caller's. Every place is found before any is written, since a write can change
    how a node flattens."""
    places, count = [], 0

    def walk(obj) -> None:
        nonlocal count
        kind, aux, children, _ = _children(obj)
        for pos, child in enumerate(children):
            if _children(child) is not None:
                walk(child)
                continue
            if count in values:
                if kind not in (dict, list) and kind not in _SET_CHILD:
                    raise TypeError(f"leaf {count} is held by an immutable {kind}")
                places.append((obj, kind, aux, pos, values[count]))
            count += 1

    walk(tree)
    for obj, kind, aux, pos, value in places:
        if kind is dict:
            obj[aux[pos]] = value
        elif kind is list:
            obj[pos] = value
        else:
            _SET_CHILD[kind](obj, pos, value)


def rewrap(tree, treedef: TreeDef):
    """``tree`` as unflattened from ``treedef`` and then used, with the objects that registered
    nodes unflattened into wrapped again, so that it flattens like the original."""
    if treedef.kind in _WRAP:
        return _WRAP[treedef.kind](tree)
    if treedef.kind in (tuple, list) and type(tree) is treedef.kind \
            and len(tree) == len(treedef.children):
        return treedef.kind(rewrap(c, td) for c, td in zip(tree, treedef.children))
    if treedef.kind is dict and type(tree) is dict and tuple(sorted(tree)) == treedef.aux:
        return {k: rewrap(tree[k], td) for k, td in zip(treedef.aux, treedef.children)}
    return tree


def tree_map(f, tree, *rest):
    leaves, td = flatten(tree)
    others = [flatten(r)[0] for r in rest]
    return unflatten(td, [f(x, *xs) for x, *xs in zip(leaves, *others)])
