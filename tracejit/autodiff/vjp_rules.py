"""Reverse-mode rules for the ops that are not plain elementwise math (those are in
partials.py): ``rule(ct, *operands, out, **attrs) -> [cotangent or None per operand]``.

Conventions:
- ``broadcast_in_dim`` is undone by summing over the new and the size-1-expanded dims.
- ``take`` (gather) transposes to ``scatter_add`` into zeros; ``scatter_add`` to ``take``.
- ``reduce_max`` / ``reduce_min`` split the cotangent equally among tied extremes (as JAX).
- ``reduce_prod`` is exact with zeros in the input at every order (products of the others,
  no division).
- ``where`` routes the cotangent to the chosen branch; the condition has none.
- ``convert`` converts the cotangent back (an integer or bool operand has none).
- ``cumsum`` transposes to the reversed running sum of the cotangent.
- ``cumprod`` is differentiated as a log-depth scan of products (as JAX): exact with zeros
  in the input at every order.
- ``sort`` scatters the cotangent back through the sorting permutation (argsort).
- ``call`` (checkpoint) and ``optimization_barrier`` are handled in reverse.py.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..ir import dtypes, ops
from ..ir.registry import rule_table
from ..tracer.numpy.arithmetic import where
from ..tracer.numpy.lifting import astype, reshape
from .build import expand, scalar, kept_dims, mask, op, sum_axes, swap_last, zeros_like

VJP_RULES, vjp_rule = rule_table()
# Ops holding regions (control flow, control_rules.py): ``rule(op, operands, which operands
# are active) -> (results, pullback)``, ``pullback(result cotangents) -> operand cotangents``;
# the rule emits the forward op itself, since it may need to keep more of it (a scan's carries).
REGION_VJP_RULES, region_vjp_rule = rule_table()


@vjp_rule(ops.where)
def _(ct, c, x, y, out):
    zero = zeros_like(ct)
    return [None, where(c, ct, zero), where(c, zero, ct)]


@vjp_rule(ops.convert)
def _(ct, x, out, dtype):
    return [astype(ct, x.dtype) if dtypes.is_float_dtype(x.dtype) else None]


@vjp_rule(ops.broadcast_in_dim)
def _(ct, x, out, shape, dims):
    summed = [d for d in range(len(shape)) if d not in dims]
    summed += [d for i, d in enumerate(dims) if x.shape[i] == 1 and shape[d] != 1]
    return [reshape(sum_axes(ct, summed), x.shape)]


@vjp_rule(ops.reshape)
def _(ct, x, out, shape):
    return [reshape(ct, x.shape)]


@vjp_rule(ops.transpose)
def _(ct, x, out, perm):
    inverse = [perm.index(d) for d in range(len(perm))]
    return [op(ops.transpose, ct, perm=inverse)]


@vjp_rule(ops.slice)
def _(ct, x, out, starts, stops, steps):
    high = [n - a - m - max(m - 1, 0) * (s - 1)
            for n, a, m, s in zip(x.shape, starts, out.shape, steps)]
    return [op(ops.pad, ct, scalar(0, ct.dtype), low=starts, high=high,
               interior=[s - 1 for s in steps])]


@vjp_rule(ops.window)
def _(ct, x, out, dims, sizes):
    # Each window offset k reads x shifted by k: its slice of the cotangent is added into
    # that box of x's cotangent (col2im), one in-place box update after another, so that no
    # padded copy per offset is held. The window dims go first, so that each offset's slice
    # is one contiguous block (a convolution's cotangent arrives with them first: the two
    # transposes cancel).
    nd, m = x.ndim, len(sizes)
    ct = op(ops.transpose, ct, perm=list(range(nd, nd + m)) + list(range(nd)))
    box = list(ct.shape[m:])
    total = zeros_like(x)
    for ks in itertools.product(*(range(k) for k in sizes)):
        piece = op(ops.slice, ct, starts=list(ks) + [0] * nd,
                   stops=[k + 1 for k in ks] + box, steps=[1] * ct.ndim)
        piece = op(ops.reshape, piece, shape=box)
        starts = [0] * nd
        for d, k in zip(dims, ks):
            starts[d] = k
        here = op(ops.slice, total, starts=starts, stops=[a + n for a, n in zip(starts, box)],
                  steps=[1] * nd)
        total = op(ops.update_slice, total, op(ops.add, here, piece), starts=starts,
                   steps=[1] * nd)
    return [total]


@vjp_rule(ops.rev)
def _(ct, x, out, dims):
    return [op(ops.rev, ct, dims=dims)]


@vjp_rule(ops.pad)
def _(ct, x, v, out, low, high, interior):
    stops = [lo + (n - 1) * (it + 1) + 1 if n else lo
             for n, lo, it in zip(x.shape, low, interior)]
    ct_x = op(ops.slice, ct, starts=low, stops=stops, steps=[it + 1 for it in interior])
    ct_v = sum_axes(ct, range(ct.ndim)) - sum_axes(ct_x, range(ct_x.ndim))
    return [ct_x, ct_v]


@vjp_rule(ops.concatenate)
def _(ct, *xs, out, axis):
    cts, start = [], 0
    for x in xs:
        starts = [start if d == axis else 0 for d in range(ct.ndim)]
        stops = [start + x.shape[d] if d == axis else n for d, n in enumerate(ct.shape)]
        cts.append(op(ops.slice, ct, starts=starts, stops=stops, steps=[1] * ct.ndim))
        start += x.shape[axis]
    return cts


@vjp_rule(ops.take)
def _(ct, x, idx, out, axis):
    return [op(ops.scatter_add, zeros_like(x), idx, ct, axis=axis), None]


@vjp_rule(ops.scatter_add)
def _(ct, x, idx, upd, out, axis):
    return [ct, None, op(ops.take, ct, idx, axis=axis)]


@vjp_rule(ops.update_slice)
def _(ct, x, v, out, starts, steps):
    # the overwritten box of x gets no gradient; v gets the box's cotangent
    stops = [s.stop for s in ops.update_box(starts, steps, v.shape)]
    return [op(ops.update_slice, ct, zeros_like(v), starts=starts, steps=steps),
            op(ops.slice, ct, starts=starts, stops=stops, steps=steps)]


@vjp_rule(ops.scatter)
def _(ct, x, idx, upd, out, axis):
    # The overwritten slices of x get no gradient; an update gets its slice's cotangent only
    # if it was the last write there (a repeated index keeps the last).
    m, n = idx.size, x.shape[axis]
    order = op(ops.reshape, op(ops.iota, shape=(m,), dim=0, dtype=dtypes.int64), shape=idx.shape)
    flat_idx = op(ops.reshape, op(ops.convert, idx, dtype=dtypes.int64), shape=(m,))
    owner = op(ops.scatter, op(ops.broadcast_in_dim, scalar(-1, np.int64), shape=(n,), dims=()),
               flat_idx, op(ops.reshape, order, shape=(m,)), axis=0)
    last = op(ops.eq, op(ops.take, owner, idx, axis=0), order)
    kept = op(ops.broadcast_in_dim, last, shape=upd.shape,
              dims=tuple(range(axis, axis + idx.ndim)))
    return [op(ops.scatter, ct, idx, zeros_like(upd), axis=axis), None,
            op(ops.where, kept, op(ops.take, ct, idx, axis=axis), zeros_like(upd))]


@vjp_rule(ops.cumsum)
def _(ct, x, out, axis):
    return [op(ops.rev, op(ops.cumsum, op(ops.rev, ct, dims=[axis]), axis=axis), dims=[axis])]


def shift(x, d, axis, fill):
    """x moved d places up along axis: out[i] = x[i - d], ``fill`` for i < d."""
    n = x.shape[axis]
    d = min(d, n)
    kept = op(ops.slice, x, starts=[0] * x.ndim,
              stops=[n - d if a == axis else m for a, m in enumerate(x.shape)],
              steps=[1] * x.ndim)
    return op(ops.pad, kept, scalar(fill, x.dtype),
              low=[d if a == axis else 0 for a in range(x.ndim)], high=[0] * x.ndim,
              interior=[0] * x.ndim)


def unshift(x, d, axis):
    """The transpose of shift(x, d, axis, 0): out[i] = x[i + d], 0 for i + d >= n."""
    kept = op(ops.slice, x, starts=[d if a == axis else 0 for a in range(x.ndim)],
              stops=list(x.shape), steps=[1] * x.ndim)
    return op(ops.pad, kept, scalar(0, x.dtype), low=[0] * x.ndim,
              high=[d if a == axis else 0 for a in range(x.ndim)], interior=[0] * x.ndim)


def cumprod_levels(x, axis):
    """The running product as a log-depth scan (Hillis-Steele: c <- c * c shifted by 1, 2,
    4, ...), as JAX differentiates cumprod: each level's (c, d). Its derivatives are built of
    mul, slice and pad, whose own derivatives are exact, so every order of derivative is exact
    where x holds zeros (a division by x, or a mask of where the zeros are, is exact for the
    first derivative only)."""
    levels, c, d = [], x, 1
    while d < x.shape[axis]:
        levels.append((c, d))
        c = c * shift(c, d, axis, 1)
        d *= 2
    return levels


@vjp_rule(ops.cumprod)
def _(ct, x, out, axis):
    # the transpose of each level's tangent map dc -> dc * shift(c) + c * shift(dc), last first
    for c, d in reversed(cumprod_levels(x, axis)):
        ct = ct * shift(c, d, axis, 1) + unshift(ct * c, d, axis)
    return [ct]


def scatter_along_axis(ct, perm, axis):
    """The transpose of take_along_axis(x, perm, axis): each ct[..., k, ...] is added into
    x[..., perm[..., k], ...], through one scatter_add on the flattened array."""
    last = ct.ndim - 1
    if axis != last:
        order = [d for d in range(ct.ndim) if d != axis] + [axis]
        back = [order.index(d) for d in range(ct.ndim)]
        moved = scatter_along_axis(op(ops.transpose, ct, perm=order),
                                   op(ops.transpose, perm, perm=order), last)
        return op(ops.transpose, moved, perm=back)
    if ct.size == 0:
        return ct
    n = ct.shape[-1]
    rows = op(ops.iota, shape=(ct.size // n, n), dim=0, dtype=perm.dtype)
    index = reshape(reshape(perm, (-1, n)) + rows * n, (-1,))
    flat = op(ops.scatter_add, zeros_like(reshape(ct, (-1,))), index, reshape(ct, (-1,)),
              axis=0)
    return reshape(flat, ct.shape)


@vjp_rule(ops.sort)
def _(ct, x, out, axis, kind):
    # Ties are equal values, so any sorting permutation routes the cotangent correctly.
    return [scatter_along_axis(ct, op(ops.argsort, x, axis=axis, kind=kind), axis)]


@vjp_rule(ops.reduce_sum)
def _(ct, x, out, axes):
    return [expand(ct, x.shape, kept_dims(x.ndim, axes))]


def _extreme_vjp(ct, x, out, axes):
    kept = kept_dims(x.ndim, axes)
    hit = mask(x == expand(out, x.shape, kept), x)
    share = ct / sum_axes(hit, axes)
    return [expand(share, x.shape, kept) * hit]


vjp_rule(ops.reduce_max)(_extreme_vjp)
vjp_rule(ops.reduce_min)(_extreme_vjp)


def prod_partial(x, axes):
    """d prod(x) / d x_i = the product of the other elements: the running products from the
    left and from the right, each stopping before i (exact with zeros, at every order)."""
    kept = kept_dims(x.ndim, axes)
    perm = kept + sorted(axes)
    moved = op(ops.transpose, x, perm=perm)
    n = int(np.prod([x.shape[a] for a in axes]))
    flat = reshape(moved, tuple(moved.shape[:len(kept)]) + (n,))
    last = flat.ndim - 1
    left = shift(op(ops.cumprod, flat, axis=last), 1, last, 1)
    right = op(ops.rev, shift(op(ops.cumprod, op(ops.rev, flat, dims=[last]), axis=last),
                              1, last, 1), dims=[last])
    others = reshape(left * right, moved.shape)
    return op(ops.transpose, others, perm=[perm.index(d) for d in range(x.ndim)])


@vjp_rule(ops.reduce_prod)
def _(ct, x, out, axes):
    return [expand(ct, x.shape, kept_dims(x.ndim, axes)) * prod_partial(x, axes)]


@vjp_rule(ops.matmul)
def _(ct, a, b, out):
    return [op(ops.matmul, ct, swap_last(b)), op(ops.matmul, swap_last(a), ct)]
