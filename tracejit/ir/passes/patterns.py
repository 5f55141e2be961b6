"""simplify's table of rewrite patterns, filled by simplify.py (layout and conversion chains),
algebra.py (arithmetic identities that keep NumPy's results exactly) and control.py
(control-flow ops).

``PATTERNS``: op -> [(opdef of the op defining its first operand, or None for any; rewrite)],
tried in order. ``rewrite(rw, op, x, ctx)`` gets the op, its (renamed) first operand ``x``
(None for an op without operands), a Rewriter and the Function's users and results; it returns
the Value replacing the op's result, or None (no match); for an op of several results, a list
with a Value per result (None for one that nothing uses).

Each pattern has a name (``rewrite.pattern_name``), which the pass log counts when it fires
(``TRACEJIT_DUMP=passes``, ``lower(...).passes``); ``without_patterns`` switches some off for a
while, to measure what they do.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .. import ops

PATTERNS: dict = {}


def pattern(opdef, inner=None, name: str | None = None):
    def register(rewrite):
        rewrite.pattern_name = name or f"{opdef.name}" + (f"({inner.name})" if inner else "")
        PATTERNS.setdefault(opdef, []).append((inner, rewrite))
        return rewrite
    return register


def pattern_names() -> list[str]:
    """Every registered pattern's name, in registration order."""
    return [rw.pattern_name for entries in PATTERNS.values() for _, rw in entries]


@contextmanager
def without_patterns(*names: str):
    """The named patterns are not tried inside the ``with`` block: for measuring what they
    do (benchmarks/passes.py). It changes the one table, so not while another thread
    optimizes."""
    unknown = set(names) - set(pattern_names())
    if unknown:
        raise ValueError(f"no patterns named {sorted(unknown)}")
    saved = {op: list(entries) for op, entries in PATTERNS.items()}
    for entries in PATTERNS.values():
        entries[:] = [(inner, rw) for inner, rw in entries if rw.pattern_name not in names]
    try:
        yield
    finally:
        for op, entries in saved.items():
            PATTERNS[op][:] = entries


# -- helpers the patterns share ----------------------------------------------------------------
def splat(v):
    """The value of every element of ``v`` (a NumPy scalar), if ``v`` is a constant, or a
    broadcast or reshape of one, whose elements are all the same bit for bit (one sign of
    zero, no NaN); else None."""
    while v.op is not None and v.op.opdef in (ops.broadcast_in_dim, ops.reshape):
        v = v.op.operands[0]
    if v.op is None or v.op.opdef is not ops.constant:
        return None
    a = np.asarray(v.op.attrs["value"])
    if a.size == 0:
        return None
    first = a.flat[0]
    same = a == first
    if a.dtype.kind == "f":
        same &= np.signbit(a) == np.signbit(first)
    return first if same.all() else None


def unit_map(src: tuple, dst: tuple) -> dict | None:
    """For shapes that differ only in dims of size 1: the dim of ``dst`` holding each dim of
    ``src`` that is not of size 1 (None for shapes that differ otherwise)."""
    a = [i for i, n in enumerate(src) if n != 1]
    b = [j for j, n in enumerate(dst) if n != 1]
    if [src[i] for i in a] != [dst[j] for j in b]:
        return None
    return dict(zip(a, b))


def place_dims(ndim: int, fixed: dict, out_ndim: int) -> tuple | None:
    """Broadcast dims for an operand of ``ndim`` dims: ``fixed[i]`` for its dims of size > 1;
    a dim of size 1 may go to any dim of the result, so it takes the lowest one left (which
    leaves the most room). None if the dims cannot be strictly increasing."""
    dims, prev = [], -1
    for i in range(ndim):
        d = fixed.get(i, prev + 1)
        if d <= prev or d >= out_ndim:
            return None
        dims.append(d)
        prev = d
    return tuple(dims)


@dataclass
class Context:
    users: dict       # Value -> the ops reading it (Function.uses())
    results: set      # the Function's results
