"""Algebraic simplification of layout and conversion chains: identities vanish, chains of one
layout op collapse into one (fewer index computations in fused kernels, fewer copies).

A 2-D transpose of a matmul used only there becomes the matmul of the transposed operands,
``(A @ B).T -> B.T @ A.T`` (autodiff's weight gradients are written this way): the operand
transposes cancel or become BLAS transpose flags (see fusion's matmul operand ops), where the
transpose of the product would be a strided copy of a whole weight-sized array.

Control-flow ops have their own patterns in control.py (a ``cond`` on a constant index
becomes its branch; outputs and inputs of a ``scan`` that nothing needs are dropped)."""
from __future__ import annotations

from .. import ops
from ..graph import Function
from . import control  # noqa: F401  (registers the control-flow patterns)
from .patterns import PATTERNS, Context, pattern
from .rewrite import Rewriter


# -- identities: the op returns its operand ---------------------------------------------------
@pattern(ops.convert)
def _(rw, op, x, ctx):
    return x if op.attrs["dtype"] == x.dtype else None


@pattern(ops.reshape)
def _(rw, op, x, ctx):
    return x if tuple(op.attrs["shape"]) == x.shape else None


@pattern(ops.transpose)
def _(rw, op, x, ctx):
    return x if tuple(op.attrs["perm"]) == tuple(range(x.type.ndim)) else None


@pattern(ops.broadcast_in_dim)
def _(rw, op, x, ctx):
    a = op.attrs
    same = tuple(a["shape"]) == x.shape and tuple(a["dims"]) == tuple(range(x.type.ndim))
    return x if same else None


@pattern(ops.rev)
def _(rw, op, x, ctx):
    return x if all(x.shape[d] <= 1 for d in op.attrs["dims"]) else None


@pattern(ops.slice)
def _(rw, op, x, ctx):
    a = op.attrs
    return x if all(s == 0 and e == n and st == 1 for s, e, st, n in
                    zip(a["starts"], a["stops"], a["steps"], x.shape)) else None


# -- chains of one layout op collapse into one ------------------------------------------------
@pattern(ops.reshape, inner=ops.reshape)
def _(rw, op, x, ctx):
    return rw.new(ops.reshape, x.op.operands, dict(op.attrs), op.loc).result


@pattern(ops.broadcast_in_dim, inner=ops.broadcast_in_dim)
def _(rw, op, x, ctx):
    dims = tuple(op.attrs["dims"][d] for d in x.op.attrs["dims"])
    return rw.new(ops.broadcast_in_dim, x.op.operands,
                  {"shape": op.attrs["shape"], "dims": dims}, op.loc).result


@pattern(ops.transpose, inner=ops.transpose)
def _(rw, op, x, ctx):
    perm = tuple(x.op.attrs["perm"][p] for p in op.attrs["perm"])
    return rw.new(ops.transpose, x.op.operands, {"perm": perm}, op.loc).result


# -- (A @ B).T -> B.T @ A.T, where the product is used only there -----------------------------
def _transposed(rw: Rewriter, v, loc):
    """``v.T`` for a 2-D value, cancelling a transpose that produced ``v``."""
    if v.op is not None and v.op.opdef is ops.transpose and tuple(v.op.attrs["perm"]) == (1, 0):
        return v.op.operands[0]
    return rw.new(ops.transpose, [v], {"perm": (1, 0)}, loc).result


@pattern(ops.transpose, inner=ops.matmul)
def _(rw, op, x, ctx):
    product = op.operands[0]
    if (tuple(op.attrs["perm"]) != (1, 0) or x.type.ndim != 2 or product in ctx.results
            or len(ctx.users.get(product, ())) != 1):
        return None
    a, b = x.op.operands
    return rw.new(ops.matmul, [_transposed(rw, b, op.loc), _transposed(rw, a, op.loc)],
                  dict(x.op.attrs), op.loc).result


def simplify(fn: Function) -> Function:
    rw = Rewriter(fn)
    ctx = Context(fn.uses(), set(fn.results))
    for op in fn.ops:
        new = None
        for inner, rewrite in PATTERNS.get(op.opdef, ()):
            x = rw.get(op.operands[0]) if op.operands else None
            if inner is not None and (x is None or x.op is None or x.op.opdef is not inner):
                continue
            new = rewrite(rw, op, x, ctx)
            if new is not None:
                break
        if new is None:
            rw.keep(op)
            continue
        for r, value in zip(op.results, new if isinstance(new, list) else [new]):
            if value is not None:
                rw.replace(r, value)
    return rw.finish()

