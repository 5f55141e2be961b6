"""simplify's table of rewrite patterns, filled by simplify.py (layout and conversion chains)
and control.py (control-flow ops).

``PATTERNS``: op -> [(opdef of the op defining its first operand, or None for any; rewrite)],
tried in order. ``rewrite(rw, op, x, ctx)`` gets the op, its (renamed) first operand ``x``
(None for an op without operands), a Rewriter and the Function's users and results; it returns
the Value replacing the op's result, or None (no match); for an op of several results, a list
with a Value per result (None for one that nothing uses).
"""
from __future__ import annotations

from dataclasses import dataclass

PATTERNS: dict = {}


def pattern(opdef, inner=None):
    def register(rewrite):
        PATTERNS.setdefault(opdef, []).append((inner, rewrite))
        return rewrite
    return register


@dataclass
class Context:
    users: dict       # Value -> the ops reading it (Function.uses())
    results: set      # the Function's results
