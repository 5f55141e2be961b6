"""Algebraic simplification of layout and conversion chains: identities vanish, chains of one
layout op collapse into one (fewer index computations in fused kernels, fewer copies)."""
from __future__ import annotations

from .. import ops
from ..graph import Function
from .rewrite import Rewriter


def _is_identity(op) -> bool:
    (x,) = op.operands
    a = op.attrs
    if op.opdef is ops.convert:
        return a["dtype"] == x.dtype
    if op.opdef is ops.reshape:
        return tuple(a["shape"]) == x.shape
    if op.opdef is ops.transpose:
        return tuple(a["perm"]) == tuple(range(x.type.ndim))
    if op.opdef is ops.broadcast_in_dim:
        return tuple(a["shape"]) == x.shape and tuple(a["dims"]) == tuple(range(x.type.ndim))
    if op.opdef is ops.rev:
        return all(x.shape[d] <= 1 for d in a["dims"])
    if op.opdef is ops.slice:
        return all(s == 0 and e == n and st == 1 for s, e, st, n in
                   zip(a["starts"], a["stops"], a["steps"], x.shape))
    return False


def simplify(fn: Function) -> Function:
    rw = Rewriter(fn)
    for op in fn.ops:
        operands = [rw.get(v) for v in op.operands]
        if op.opdef in (ops.convert, ops.reshape, ops.transpose, ops.broadcast_in_dim,
                        ops.rev, ops.slice):
            (x,) = operands
            inner = x.op
            if _is_identity(op):
                rw.replace(op.result, x)
                continue
            if op.opdef is ops.reshape and inner is not None and inner.opdef is ops.reshape:
                new = rw.new(ops.reshape, inner.operands, dict(op.attrs), op.loc)
                rw.replace(op.result, new.result)
                continue
            if (op.opdef is ops.broadcast_in_dim and inner is not None
                    and inner.opdef is ops.broadcast_in_dim):
                dims = tuple(op.attrs["dims"][d] for d in inner.attrs["dims"])
                new = rw.new(ops.broadcast_in_dim, inner.operands,
                             {"shape": op.attrs["shape"], "dims": dims}, op.loc)
                rw.replace(op.result, new.result)
                continue
            if op.opdef is ops.transpose and inner is not None and inner.opdef is ops.transpose:
                perm = tuple(inner.attrs["perm"][p] for p in op.attrs["perm"])
                new = rw.new(ops.transpose, inner.operands, {"perm": perm}, op.loc)
                rw.replace(op.result, new.result)
                continue
        rw.keep(op)
    return rw.finish()
