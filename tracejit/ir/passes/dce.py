"""Dead code elimination: drop ops whose results nothing uses (side effects stay)."""
from __future__ import annotations

from ..graph import Function


def dce(fn: Function) -> Function:
    live = set(fn.results)
    kept = []
    for op in reversed(fn.ops):
        if op.opdef.side_effect or any(r in live for r in op.results):
            kept.append(op)
            live.update(op.operands)
    if len(kept) == len(fn.ops):
        return fn
    return Function(fn.name, fn.params, kept[::-1], fn.results)
