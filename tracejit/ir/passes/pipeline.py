"""The standard pass pipeline run before code generation: calls inlined, then simplification,
constant folding, CSE and DCE repeated until nothing changes (each is cheap and local).

Each round first optimizes every region (the bodies of cond, while_loop and scan) as a
Function of its own, with this same pipeline: a region keeps its params and result types, so
its op keeps its type. Regions close over nothing, so nothing moves in or out of a body here.

Given a ``PassLog``, every pass run here is recorded in it (pass_log.py), regions' included,
in the order they run; without one, the passes run as they are.
"""
from __future__ import annotations

from collections import Counter

from ..graph import Function
from .cse import cse
from .dce import dce
from .fold import fold_constants
from .inline import inline_calls
from .pass_log import PassLog, run_pass
from .rewrite import Rewriter
from .simplify import simplify


def optimize(fn: Function, max_rounds: int = 4, log: PassLog | None = None,
             name: str | None = None) -> Function:
    """``fn`` optimized; ``log`` records each pass, under ``name`` (default ``@fn.name``)."""
    name = name or f"@{fn.name}"
    fn = run_pass(log, "inline", inline_calls, fn, name)
    for r in range(1, max_rounds + 1):
        before = fn
        fn = _optimize_regions(fn, max_rounds, log, name)
        fired = Counter() if log is not None else None
        fn = run_pass(log, "simplify", lambda f: simplify(f, fired), fn, name, r,
                      patterns=fired)
        fn = run_pass(log, "fold", fold_constants, fn, name, r)
        fn = run_pass(log, "cse", cse, fn, name, r)
        fn = run_pass(log, "dce", dce, fn, name, r)
        if fn is before:
            break
    return fn


def _optimize_regions(fn: Function, max_rounds: int, log: PassLog | None,
                      name: str) -> Function:
    """``fn`` with each region of its ops optimized (``fn`` itself if that changes none)."""
    if not any(op.regions for op in fn.ops):
        return fn
    rw = Rewriter(fn)
    for i, op in enumerate(fn.ops):
        regions = [optimize(region, max_rounds, log, f"{name}/{i}:{region.name}")
                   for region in op.regions]
        rw.keep(op, regions if op.regions else None)
    return rw.finish()
