"""simplify's patterns for control-flow ops (into patterns.PATTERNS; simplify imports this).

- A ``cond`` whose index is a constant, or that has one branch, becomes a copy of the branch
  it would run (the index clamped, as the op's semantics say).
- A ``scan`` drops the stacked ``ys`` that nothing uses (from its body's results and its own),
  and the consts and ``xs`` that its body never reads (from its operands and body params).
  Carries stay: each iteration reads them. The body's ops that fed a dropped ``y`` go when
  ``optimize`` next cleans the region.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..graph import Function
from .patterns import pattern


@pattern(ops.cond, inner=ops.constant, name="cond-constant-index")
def _(rw, op, index, ctx):
    k = int(np.clip(int(index.op.attrs["value"]), 0, len(op.regions) - 1))
    return rw.splice(op.regions[k], [rw.get(v) for v in op.operands[1:]])


@pattern(ops.cond, name="cond-one-branch")
def _(rw, op, index, ctx):
    if len(op.regions) != 1:
        return None
    return rw.splice(op.regions[0], [rw.get(v) for v in op.operands[1:]])


def _unused(v, ctx) -> bool:
    return v not in ctx.results and not ctx.users.get(v)


@pattern(ops.scan, name="scan-unused")
def _(rw, op, x, ctx):
    (body,) = op.regions
    n, m = op.attrs["consts"], op.attrs["carries"]
    read = {v for bop in body.ops for v in bop.operands} | set(body.results)
    keep_results = list(range(m)) + [i for i in range(m, len(op.results))
                                     if not _unused(op.results[i], ctx)]
    keep_params = [i for i, p in enumerate(body.params) if n <= i < n + m or p in read]
    if len(keep_results) == len(op.results) and len(keep_params) == len(body.params):
        return None
    new_body = Function(body.name, [body.params[i] for i in keep_params], body.ops,
                        [body.results[i] for i in keep_results])
    attrs = dict(op.attrs, consts=sum(i < n for i in keep_params))
    new = rw.new(ops.scan, [rw.get(op.operands[i]) for i in keep_params], attrs, op.loc,
                 [new_body])
    out = [None] * len(op.results)
    for i, r in zip(keep_results, new.results):
        out[i] = r
    return out
