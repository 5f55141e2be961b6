"""Common subexpression elimination: an op equal to an earlier one (same op, operands and
attributes) reuses its results. Side effects, barriers and region-holding ops are never merged."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..graph import Function
from .rewrite import Rewriter


def _attr_key(v):
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes())
    return v


def cse(fn: Function) -> Function:
    rw = Rewriter(fn)
    seen = {}
    for op in fn.ops:
        operands = tuple(rw.get(v) for v in op.operands)
        if op.opdef.side_effect or op.regions or op.opdef is ops.optimization_barrier:
            rw.keep(op)
            continue
        key = (op.opdef.name, operands,
               tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items())))
        prior = seen.get(key)
        if prior is not None:
            for r, pr in zip(op.results, prior.results):
                rw.replace(r, pr)
            continue
        seen[key] = rw.keep(op)
    return rw.finish()
