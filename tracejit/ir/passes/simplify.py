"""Algebraic simplification of layout and conversion chains: identities vanish, chains of one
layout op collapse into one (fewer index computations in fused kernels, fewer copies).

A 2-D transpose of a matmul used only there becomes the matmul of the transposed operands,
``(A @ B).T -> B.T @ A.T`` (autodiff's weight gradients are written this way): the operand
transposes cancel or become BLAS transpose flags (see fusion's matmul operand ops), where the
transpose of the product would be a strided copy of a whole weight-sized array."""
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


def _transposed(rw: Rewriter, v, loc):
    """``v.T`` for a 2-D value, cancelling a transpose that produced ``v``."""
    if v.op is not None and v.op.opdef is ops.transpose and tuple(v.op.attrs["perm"]) == (1, 0):
        return v.op.operands[0]
    return rw.new(ops.transpose, [v], {"perm": (1, 0)}, loc).result


def simplify(fn: Function) -> Function:
    rw = Rewriter(fn)
    users = fn.uses()
    results = set(fn.results)
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
            if (op.opdef is ops.transpose and inner is not None and inner.opdef is ops.matmul
                    and tuple(op.attrs["perm"]) == (1, 0) and x.type.ndim == 2
                    and op.operands[0] not in results
                    and len(users.get(op.operands[0], ())) == 1):
                a, b = inner.operands
                new = rw.new(ops.matmul, [_transposed(rw, b, op.loc), _transposed(rw, a, op.loc)],
                             dict(inner.attrs), op.loc)
                rw.replace(op.result, new.result)
                continue
        rw.keep(op)
    return rw.finish()
