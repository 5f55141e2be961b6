"""Dead code elimination: drop ops whose results nothing uses. Side effects stay, and so does
an op whose regions hold one (a ``cond`` or loop whose body prints): running it is the effect.
An unused control-flow op without one goes like any other op (its loop is not run at all).
Regions are cleaned by ``optimize``, which runs the passes on each of them."""
from __future__ import annotations

from ..graph import Function, Op


def has_side_effect(op: Op) -> bool:
    """Whether running ``op`` does more than compute its results: a side-effect op, or one
    holding a region (at any depth) that contains one."""
    return op.opdef.side_effect or any(has_side_effect(inner) for region in op.regions
                                       for inner in region.ops)


def dce(fn: Function) -> Function:
    live = set(fn.results)
    kept = []
    for op in reversed(fn.ops):
        if any(r in live for r in op.results) or has_side_effect(op):
            kept.append(op)
            live.update(op.operands)
    if len(kept) == len(fn.ops):
        return fn
    return Function(fn.name, fn.params, kept[::-1], fn.results)
