"""The standard pass pipeline run before code generation: calls inlined, then simplification,
constant folding, CSE and DCE repeated until nothing changes (each is cheap and local).

Each round first optimizes every region (the bodies of cond, while_loop and scan) as a
Function of its own, with this same pipeline: a region keeps its params and result types, so
its op keeps its type. Regions close over nothing, so nothing moves in or out of a body here.
"""
from __future__ import annotations

from ..graph import Function
from .cse import cse
from .dce import dce
from .fold import fold_constants
from .inline import inline_calls
from .rewrite import map_regions
from .simplify import simplify


def optimize(fn: Function, max_rounds: int = 4) -> Function:
    fn = inline_calls(fn)
    for _ in range(max_rounds):
        before = fn
        fn = map_regions(fn, lambda region: optimize(region, max_rounds))
        fn = dce(cse(fold_constants(simplify(fn))))
        if fn is before:
            break
    return fn
