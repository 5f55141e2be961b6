"""simplify's arithmetic patterns (into patterns.PATTERNS; simplify imports this): identities
that traced code and autodiff leave behind, each applied only where it gives NumPy's result bit
for bit on every input, NaNs, infinities, signed zeros and integer wraparound included. A faster
program that prints another number is a wrong program.

Done:

- ``x * 1``, ``1 * x``, ``x / 1`` -> ``x``: IEEE multiplication by one is exact, and NaN, inf
  and -0.0 come out as they went in.
- ``x + (-0.0)``, ``(-0.0) + x``, ``x - 0.0`` -> ``x`` for floats; ``x + 0``, ``0 + x``,
  ``x - 0`` for integers.
- ``-(-x)`` -> ``x``: the sign flipped twice (integers wrap twice: ``-(-INT_MIN)`` is INT_MIN).
- ``where(c, x, x)`` -> ``x``; ``where(c, x, y)`` with a constant ``c`` -> ``x`` or ``y``.
- ``convert(convert(x, t), dtype(x))`` -> ``x`` when ``t`` holds every value of x's dtype;
  ``convert(convert(x, t), u)`` -> ``convert(x, u)`` when it does and ``u`` is a float or bool,
  or all three are integers: a conversion depends on the value only (integer casts wrap).
- max, min or prod over axes of size 1 -> a reshape; the sum too, for integers.
- a reduction over no axes -> its operand (converted to the result's dtype); a float sum
  -> ``x + 0.0``, as NumPy adds the sum's identity even then.
- integer or bool max or min of a broadcast, over axes the broadcast made -> a broadcast (the
  max of copies of v is v); an integer sum of one -> ``n * x`` (both wrap alike).

Not done, because NumPy's result would change (tests/test_passes.py checks that each stays):

- ``x + 0.0`` -> ``x`` and ``x - (-0.0)`` -> ``x``: -0.0 + 0.0 is +0.0.
- ``x * 0`` -> ``0``: NaN * 0 and inf * 0 are NaN, and -1.0 * 0 is -0.0.
- ``x - x`` -> ``0``: inf - inf is NaN.
- ``x * -1`` -> ``-x``: NaN * -1 keeps the NaN's sign bit, negation flips it.
- float sum over axes of size 1 -> a reshape: NumPy's sum starts from +0.0, so the sum of
  [-0.0] is +0.0.
- float sum of a broadcast -> ``n * x``: NumPy's pairwise sum of n copies of v rounds
  differently from n * v (for n = 10, on about a quarter of random float32 values).
- float max or min of a broadcast -> the broadcast: NumPy's max of copies of -NaN is +NaN on
  some of its loops, -NaN on others.
- a convert round trip through a type that does not hold every value (int32 -> int8 -> int32
  wraps, float64 -> float32 -> float64 rounds, int64 -> float64 -> int64 above 2**53).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops
from .. import dtypes
from ..dtypes import DType
from .patterns import pattern, splat


def _one(v) -> bool:
    k = splat(v)
    return k is not None and k == 1


def _zero(v, negative: bool) -> bool:
    """``v`` is all zeros; for floats, all of the sign asked for (-0.0 if ``negative``)."""
    k = splat(v)
    if k is None or k != 0:
        return False
    return v.dtype.kind != "f" or bool(np.signbit(k)) == negative


# -- identities of one operand ----------------------------------------------------------------
@pattern(ops.mul, name="mul-one")
def _(rw, op, x, ctx):
    a, b = rw.get(op.operands[0]), rw.get(op.operands[1])
    return a if _one(b) else b if _one(a) else None


@pattern(ops.div, name="div-one")
def _(rw, op, x, ctx):
    return x if _one(rw.get(op.operands[1])) else None


@pattern(ops.add, name="add-zero")
def _(rw, op, x, ctx):
    # float: only -0.0 is an identity of IEEE addition (-0.0 + 0.0 is +0.0)
    a, b = rw.get(op.operands[0]), rw.get(op.operands[1])
    return a if _zero(b, negative=True) else b if _zero(a, negative=True) else None


@pattern(ops.sub, name="sub-zero")
def _(rw, op, x, ctx):
    # float: x - 0.0 is x + (-0.0); x - (-0.0) is x + 0.0, which turns -0.0 into +0.0
    return x if _zero(rw.get(op.operands[1]), negative=False) else None


@pattern(ops.neg, inner=ops.neg, name="double-neg")
def _(rw, op, x, ctx):
    return x.op.operands[0]


@pattern(ops.where, name="where-same")
def _(rw, op, x, ctx):
    a, b = rw.get(op.operands[1]), rw.get(op.operands[2])
    return a if a is b else None


@pattern(ops.where, name="where-constant")
def _(rw, op, x, ctx):
    k = splat(x)
    if k is None:
        return None
    return rw.get(op.operands[1] if k else op.operands[2])


# -- conversions ------------------------------------------------------------------------------
def holds(src: DType, dst: DType) -> bool:
    """Whether every value of ``src`` is a value of ``dst`` (converting there is exact)."""
    if src == dst or src.is_bool:
        return True
    s, d = src.np, dst.np
    try:
        if src.is_int and dst.is_int:
            if src.is_unsigned == dst.is_unsigned:
                return d.itemsize >= s.itemsize
            return src.is_unsigned and d.itemsize > s.itemsize
        if src.is_int and dst.is_float:
            return dtypes.finfo(d).nmant + 1 >= src.bits - (0 if src.is_unsigned else 1)
        if src.is_float and dst.is_float:
            fs, fd = dtypes.finfo(s), dtypes.finfo(d)
            return fd.nmant >= fs.nmant and fd.maxexp >= fs.maxexp and fd.minexp <= fs.minexp
    except (TypeError, ValueError):         # a dtype NumPy has no finfo for
        return False
    return False


@pattern(ops.convert, inner=ops.convert, name="convert-round-trip")
def _(rw, op, x, ctx):
    source = x.op.operands[0]
    if op.attrs["dtype"] == source.dtype and holds(source.dtype, x.dtype):
        return source
    return None


@pattern(ops.convert, inner=ops.convert, name="convert-chain")
def _(rw, op, x, ctx):
    source, dtype = x.op.operands[0], op.attrs["dtype"]
    if not holds(source.dtype, x.dtype):
        return None
    integers = all(t.kind in "biu" for t in (source.dtype, x.dtype, dtype))
    if not (dtype.kind in "fb" or integers):
        return None            # float -> int of NaN, inf or out of range is the platform's
    return rw.new(ops.convert, [source], {"dtype": dtype}, op.loc).result


# -- reductions -------------------------------------------------------------------------------
def _unit_axes(rw, op, x, ctx):
    if op.opdef is ops.reduce_sum and x.dtype.is_float:
        return None                      # np.sum([-0.0]) is +0.0: the sum starts from +0.0
    if any(x.shape[a] != 1 for a in op.attrs["axes"]):
        return None
    shape = op.results[0].shape
    return x if x.shape == shape else rw.new(ops.reshape, [x], {"shape": shape}, op.loc).result


def _of_broadcast(rw, op, x, ctx):
    """A reduction over axes the broadcast made (its operand is of size 1 there, or lacks
    them) reads copies of one value: max/min give it, an integer sum gives n times it."""
    if x.dtype.is_float:
        return None            # float: sums round, and NumPy's max may flip a NaN's sign
    axes = set(op.attrs["axes"])
    source, dims = x.op.operands[0], x.op.attrs["dims"]
    if not axes or any(d in axes and source.shape[i] != 1 for i, d in enumerate(dims)):
        return None
    kept = {d: k for k, d in enumerate(d for d in range(x.type.ndim) if d not in axes)}
    if any(d in axes for d in dims):         # the source's size-1 dims there go
        source = rw.new(ops.reshape, [source], {"shape": [
            n for n, d in zip(source.shape, dims) if d not in axes]}, op.loc).result
        dims = [d for d in dims if d not in axes]
    shape = op.results[0].shape
    out = rw.new(ops.broadcast_in_dim, [source],
                 {"shape": shape, "dims": tuple(kept[d] for d in dims)}, op.loc)
    n = math.prod(x.shape[a] for a in axes)
    if op.opdef is not ops.reduce_sum or n == 1:
        return out.result
    count = np.array(n).astype(x.dtype.np)          # wraps, as the sum does
    k = rw.new(ops.constant, [], {"value": count}, op.loc).result
    k = rw.new(ops.broadcast_in_dim, [k], {"shape": shape, "dims": ()}, op.loc).result
    return rw.new(ops.mul, [out.result, k], {}, op.loc).result


def _no_axes(rw, op, x, ctx):
    """A reduction over no axes is its operand (converted to the result's dtype), except
    that NumPy's float sum still adds its identity: ``np.sum(-0.0, axis=())`` is +0.0. (The
    kernel generator has no loop for it: fused beside another reduction it indexed the
    operand with that reduction's indices.)"""
    if op.attrs["axes"]:
        return None
    result = op.results[0]
    if op.opdef is ops.reduce_sum and x.dtype.is_float:
        zero = rw.new(ops.constant, [], {"value": np.array(0.0, x.dtype.np)}, op.loc).result
        zero = rw.new(ops.broadcast_in_dim, [zero], {"shape": x.shape, "dims": ()},
                      op.loc).result
        x = rw.new(ops.add, [x, zero], {}, op.loc).result
    if x.dtype != result.dtype:
        x = rw.new(ops.convert, [x], {"dtype": result.dtype}, op.loc).result
    return x


for _reduction in (ops.reduce_max, ops.reduce_min, ops.reduce_prod, ops.reduce_sum):
    pattern(_reduction, name="reduce-unit-axes")(_unit_axes)
    pattern(_reduction, name="reduce-no-axes")(_no_axes)
for _reduction in (ops.reduce_max, ops.reduce_min, ops.reduce_sum):
    pattern(_reduction, inner=ops.broadcast_in_dim, name="reduce-of-broadcast")(_of_broadcast)
