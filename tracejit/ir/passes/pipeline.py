"""The standard pass pipeline run before code generation: calls inlined, then simplification,
constant folding, CSE and DCE repeated until nothing changes (each is cheap and local)."""
from __future__ import annotations

from ..graph import Function
from .cse import cse
from .dce import dce
from .fold import fold_constants
from .inline import inline_calls
from .simplify import simplify


def optimize(fn: Function, max_rounds: int = 4) -> Function:
    fn = inline_calls(fn)
    for _ in range(max_rounds):
        before = fn
        fn = dce(cse(fold_constants(simplify(fn))))
        if fn is before:
            break
    return fn
