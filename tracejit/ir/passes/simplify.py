"""Algebraic simplification of layout and conversion chains: identities vanish, chains of one
layout op collapse into one (fewer index computations in fused kernels, fewer copies), and so
does a broadcast next to a reshape that only adds or drops size-1 dims.

A 2-D transpose of a matmul used only there becomes the matmul of the transposed operands,
``(A @ B).T -> B.T @ A.T`` (autodiff's weight gradients are written this way): the operand
transposes cancel or become BLAS transpose flags (see fusion's matmul operand ops), where the
transpose of the product would be a strided copy of a whole weight-sized array.

Arithmetic identities that keep NumPy's results bit for bit (``x * 1``, ``--x``, ...) are in
algebra.py. Control-flow ops have their own patterns in control.py (a ``cond`` on a constant
index becomes its branch; outputs and inputs of a ``scan`` that nothing needs are dropped)."""
from __future__ import annotations

from collections import Counter

from .. import ops
from ..graph import Function
from . import algebra, control  # noqa: F401  (register their patterns)
from .patterns import PATTERNS, Context, pattern, place_dims, unit_map
from .rewrite import Rewriter


# -- identities: the op returns its operand ---------------------------------------------------
@pattern(ops.convert, name="identity-convert")
def _(rw, op, x, ctx):
    return x if op.attrs["dtype"] == x.dtype else None


@pattern(ops.reshape, name="identity-reshape")
def _(rw, op, x, ctx):
    return x if tuple(op.attrs["shape"]) == x.shape else None


@pattern(ops.transpose, name="identity-transpose")
def _(rw, op, x, ctx):
    return x if tuple(op.attrs["perm"]) == tuple(range(x.type.ndim)) else None


@pattern(ops.broadcast_in_dim, name="identity-broadcast")
def _(rw, op, x, ctx):
    a = op.attrs
    same = tuple(a["shape"]) == x.shape and tuple(a["dims"]) == tuple(range(x.type.ndim))
    return x if same else None


@pattern(ops.rev, name="identity-rev")
def _(rw, op, x, ctx):
    return x if all(x.shape[d] <= 1 for d in op.attrs["dims"]) else None


@pattern(ops.slice, name="identity-slice")
def _(rw, op, x, ctx):
    a = op.attrs
    return x if all(s == 0 and e == n and st == 1 for s, e, st, n in
                    zip(a["starts"], a["stops"], a["steps"], x.shape)) else None


# -- chains of one layout op collapse into one ------------------------------------------------
@pattern(ops.reshape, inner=ops.reshape, name="reshape-chain")
def _(rw, op, x, ctx):
    source = x.op.operands[0]
    if source.shape == tuple(op.attrs["shape"]):
        return source
    return rw.new(ops.reshape, [source], dict(op.attrs), op.loc).result


@pattern(ops.broadcast_in_dim, inner=ops.broadcast_in_dim, name="broadcast-chain")
def _(rw, op, x, ctx):
    dims = tuple(op.attrs["dims"][d] for d in x.op.attrs["dims"])
    return rw.new(ops.broadcast_in_dim, x.op.operands,
                  {"shape": op.attrs["shape"], "dims": dims}, op.loc).result


@pattern(ops.transpose, inner=ops.transpose, name="transpose-chain")
def _(rw, op, x, ctx):
    perm = tuple(x.op.attrs["perm"][p] for p in op.attrs["perm"])
    if perm == tuple(range(len(perm))):
        return x.op.operands[0]
    return rw.new(ops.transpose, x.op.operands, {"perm": perm}, op.loc).result


# -- a reshape that only adds or drops size-1 dims, next to a broadcast, joins it ---------------
# The softmax's ``keepdims`` and its gradient write ``broadcast(reshape(s, [n, 1]))``: one
# broadcast is one index map in a fused kernel, where the pair was two.
@pattern(ops.broadcast_in_dim, inner=ops.reshape, name="broadcast-of-reshape")
def _(rw, op, x, ctx):
    source = x.op.operands[0]
    where = unit_map(source.shape, x.shape)
    if where is None:
        return None
    dims = op.attrs["dims"]
    new = place_dims(source.type.ndim, {i: dims[j] for i, j in where.items()},
                 len(op.attrs["shape"]))
    if new is None:
        return None
    return rw.new(ops.broadcast_in_dim, [source], {"shape": op.attrs["shape"], "dims": new},
                  op.loc).result


@pattern(ops.reshape, inner=ops.broadcast_in_dim, name="reshape-of-broadcast")
def _(rw, op, x, ctx):
    shape = tuple(op.attrs["shape"])
    where = unit_map(x.shape, shape)
    if where is None:
        return None
    source, dims = x.op.operands[0], x.op.attrs["dims"]
    fixed = {i: where[d] for i, d in enumerate(dims) if x.shape[d] != 1}
    new = place_dims(source.type.ndim, fixed, len(shape))
    if new is None:
        return None
    return rw.new(ops.broadcast_in_dim, [source], {"shape": shape, "dims": new}, op.loc).result


# -- (A @ B).T -> B.T @ A.T, where the product is used only there -----------------------------
def _transposed(rw: Rewriter, v, loc):
    """``v.T`` for a 2-D value, cancelling a transpose that produced ``v``."""
    if v.op is not None and v.op.opdef is ops.transpose and tuple(v.op.attrs["perm"]) == (1, 0):
        return v.op.operands[0]
    return rw.new(ops.transpose, [v], {"perm": (1, 0)}, loc).result


@pattern(ops.transpose, inner=ops.matmul, name="matmul-transpose")
def _(rw, op, x, ctx):
    product = op.operands[0]
    if (tuple(op.attrs["perm"]) != (1, 0) or x.type.ndim != 2 or product in ctx.results
            or len(ctx.users.get(product, ())) != 1):
        return None
    a, b = x.op.operands
    return rw.new(ops.matmul, [_transposed(rw, b, op.loc), _transposed(rw, a, op.loc)],
                  dict(x.op.attrs), op.loc).result


def simplify(fn: Function, fired: Counter | None = None) -> Function:
    """``fn`` with the first matching pattern applied to each op (one sweep; ``optimize``
    repeats it). ``fired``, if given, counts the patterns that matched, by name."""
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
                if fired is not None:
                    fired[rewrite.pattern_name] += 1
                break
        if new is None:
            rw.keep(op)
            continue
        for r, value in zip(op.results, new if isinstance(new, list) else [new]):
            if value is not None:
                rw.replace(r, value)
    return rw.finish()
