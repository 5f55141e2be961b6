"""Why a jitted function traced again: explained per argument, and warned about when it
keeps happening (each retrace costs a trace and a compile; the user can usually avoid it)."""
from __future__ import annotations

import collections
import sys
import warnings

from ..config import config
from ..tracer.errors import _is_internal
from ..tracer.pytree import flatten_with_paths
from ..tracer.trace_function import _rename
from .methods import BoundSelf, ClassSelf
from .signature import describe_leaf_key


class RetraceWarning(UserWarning):
    """A jitted function keeps being traced again: some argument keeps changing."""


def _user_stacklevel() -> int:
    """The stacklevel for warnings.warn that points at the user's call, not at tracejit."""
    frame, level = sys._getframe(2), 2      # 2: the caller of the function calling us
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def _child_keys(td) -> list[str]:
    if td.kind is dict:
        return [f"[{k!r}]" for k in td.aux]
    if td.kind is BoundSelf:
        return [f".{k}" for k in td.aux[1]]
    if hasattr(td.kind, "_fields"):
        return [f".{f}" for f in td.kind._fields]
    return [f"[{i}]" for i in range(len(td.children))]


def _tree_changes(old, new, path: str) -> list[tuple[str, str]]:
    """Where two pytree structures differ: (path, what changed), for retrace explanations."""
    if old == new:
        return []
    if old.kind == "static" and new.kind == "static":      # a str (bytes, enum) leaf changed
        return [(path, f"static value {old.aux[1]!r} -> {new.aux[1]!r}")]
    if old.kind is ClassSelf and new.kind is ClassSelf:    # a classmethod's cls
        return [(path, f"class {old.aux.__name__} -> {new.aux.__name__}")]
    if old.kind is BoundSelf and new.kind is BoundSelf and old.aux[1] == new.aux[1]:
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


def explain(sig, old, new, dyn_args, dyn_kwargs) -> list[tuple[str, str]]:
    """(argument, what changed) between two cache keys of ``sig``'s function."""
    (old_tree, old_static, old_leaves), (new_tree, new_static, new_leaves) = old, new
    changes = []
    if old_static != new_static:
        o, n = dict(old_static), dict(new_static)
        for k in sorted(set(o) | set(n), key=str):
            if o.get(k) != n.get(k):
                arg = sig.name(k) if isinstance(k, int) else k
                changes.append((arg, f"static value {o.get(k)!r} -> {n.get(k)!r}"))
    if old_tree != new_tree:
        top = {"": "the arguments", "[0]": "the positional arguments",
               "[1]": "the keyword arguments"}
        changes += [(top.get(p) or _rename(p, sig.arg_names), d)
                    for p, d in _tree_changes(old_tree, new_tree, "")]
        return changes
    _, paths, _ = flatten_with_paths((dyn_args, dyn_kwargs))
    for p, a, b in zip(paths, old_leaves, new_leaves):
        if a != b:
            arg = _rename(p, sig.arg_names)
            if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
                what = f"shape {tuple(a[1])} -> {tuple(b[1])}"
            elif isinstance(a, tuple) and isinstance(b, tuple) and a[1] == b[1]:
                what = f"dtype {a[0]} -> {b[0]}"
            else:
                what = f"{describe_leaf_key(a)} -> {describe_leaf_key(b)}"
            changes.append((arg, what))
    return changes


class Retraces:
    """The keys a jitted function traced, and which arguments made it trace again."""

    def __init__(self, fn, sig):
        self.fn = fn
        self.sig = sig
        self.keys: list = []
        self.changes: collections.Counter = collections.Counter()
        self.warned = False

    def note(self, key, dyn_args, dyn_kwargs, trace_count: int, guarded=()):
        """Before trace number ``trace_count + 1``: print why (TRACEJIT_EXPLAIN_RETRACE) and
        warn once the function has traced ``config.retrace_warn`` times. ``guarded``: the
        globals and closure values that changed (guards.py), (name, what) pairs."""
        changes = explain(self.sig, self.keys[-1], key, dyn_args, dyn_kwargs) + list(guarded)
        for arg, _ in changes:
            self.changes[arg] += 1
        name = getattr(self.fn, "__qualname__", "function")
        if config.explain_retrace:
            detail = "; ".join(f"{a}: {d}" for a, d in changes) or "no visible change"
            print(f"tracejit: retracing {name} (trace #{trace_count + 1}): {detail}",
                  file=sys.stderr)
        if not self.warned and trace_count + 1 >= config.retrace_warn:
            self.warned = True
            culprit = ", ".join(a for a, _ in self.changes.most_common(3))
            warnings.warn(
                f"tracejit: {name} has been traced {trace_count + 1} times; what keeps "
                f"changing is {culprit}. Each new shape, dtype, structure or static value, and "
                "each new value of a global or closure variable it reads, traces again. Keep shapes fixed (pad batches), or set "
                "TRACEJIT_EXPLAIN_RETRACE=1 to see every change.", RetraceWarning,
                stacklevel=_user_stacklevel())
