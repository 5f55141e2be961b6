"""Constant folding: an elementwise op whose operands are all small constants becomes a
constant, computed by the op's reference implementation (so folding cannot change meaning).
Layout ops are not folded: a broadcast scalar stays a scalar kernel argument plus index
arithmetic, rather than becoming an array whose size would depend on the batch size."""
from __future__ import annotations

from .. import ops
from ..graph import Function
from .rewrite import Rewriter

MAX_FOLDED_ELEMENTS = 64


def fold_constants(fn: Function) -> Function:
    rw = Rewriter(fn)
    for op in fn.ops:
        operands = [rw.get(v) for v in op.operands]
        foldable = (op.opdef.category == "elementwise" and operands
                    and not op.regions and len(op.results) == 1
                    and op.result.type.size <= MAX_FOLDED_ELEMENTS
                    and all(v.op is not None and v.op.opdef is ops.constant for v in operands))
        if foldable:
            value = op.opdef.impl(*[v.op.attrs["value"] for v in operands], **op.attrs)
            value = value.astype(op.result.type.dtype.np, copy=False)
            new = rw.new(ops.constant, [], {"value": value}, op.loc)
            rw.replace(op.result, new.result)
            continue
        rw.keep(op)
    return rw.finish()
