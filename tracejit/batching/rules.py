"""Batching rules, one per op: ``rule(op, operands, batched, size) -> (results, batched)``.

Operands flagged batched carry the batch at axis 0 (push.py). A rule returns None to leave the
op to ``map_over_batch`` (a case it does not vectorize). Control flow and ``call`` have their
rules in control_rules.py. tests/test_op_coverage.py checks every op is in one of the tables
or named in ``MAPPED_OVER_BATCH``.
"""
from __future__ import annotations

import numpy as np

from ..ir import ops
from ..ir.registry import OPS
from ..tracer.numpy.lifting import emit
from .push import RULES, all_batched, emit_as_is, rule

# Ops with no rule here: every batched use runs once per example (push.map_over_batch).
# debug_print prints each example's values, as jax.vmap does (one print of the batch would
# also break a format spec: "{:.3f}" of an array is a TypeError).
MAPPED_OVER_BATCH: frozenset = frozenset({ops.debug_print})


def _shift(axes) -> tuple:
    return tuple(a + 1 for a in axes)


def _one(x) -> tuple[list, list]:
    return [x], [True]


def _move_to_front(x, axis: int):
    """x with its dimension ``axis`` moved to 0 (where the batch lives)."""
    if axis == 0:
        return x
    n = x._value.type.ndim
    perm = (axis,) + tuple(d for d in range(n) if d != axis)
    return emit(x._trace, ops.transpose, [x], perm=perm)


# -- elementwise: the batch is one more axis of the same op ----------------------------------
def _elementwise(o, xs, bs, size):
    return emit_as_is(o, all_batched(xs, bs, size)), [True] * len(o.results)


for _op in OPS.values():
    if _op.category in ("elementwise", "linalg"):
        # linalg ops take leading batch dims of their own: the batch is one more
        RULES[_op] = _elementwise


# -- an axis attribute moves by one -----------------------------------------------------------
def _axes_attr(name, many):
    def shifted(o, xs, bs, size):
        value = o.attrs[name]
        return emit_as_is(o, xs, **{name: _shift(value) if many else value + 1}), [True]
    return shifted


for _op, _name, _many in ((ops.reduce_sum, "axes", True), (ops.reduce_max, "axes", True),
                          (ops.reduce_min, "axes", True), (ops.reduce_prod, "axes", True),
                          (ops.argmax, "axis", False), (ops.argmin, "axis", False),
                          (ops.cumsum, "axis", False), (ops.cumprod, "axis", False),
                          (ops.sort, "axis", False), (ops.argsort, "axis", False),
                          (ops.rev, "dims", True), (ops.window, "dims", True)):
    RULES[_op] = _axes_attr(_name, _many)


# -- layout ----------------------------------------------------------------------------------
@rule(ops.broadcast_in_dim)
def _broadcast_in_dim(o, xs, bs, size):
    return _one(emit(xs[0]._trace, ops.broadcast_in_dim, xs,
                     shape=(size,) + tuple(o.attrs["shape"]),
                     dims=(0,) + _shift(o.attrs["dims"])))


@rule(ops.reshape)
def _reshape(o, xs, bs, size):
    return _one(emit(xs[0]._trace, ops.reshape, xs, shape=(size,) + tuple(o.attrs["shape"])))


@rule(ops.transpose)
def _transpose(o, xs, bs, size):
    return _one(emit(xs[0]._trace, ops.transpose, xs, perm=(0,) + _shift(o.attrs["perm"])))


@rule(ops.slice)
def _slice(o, xs, bs, size):
    a = o.attrs
    return emit_as_is(o, xs, starts=(0,) + tuple(a["starts"]),
                      stops=(size,) + tuple(a["stops"]), steps=(1,) + tuple(a["steps"])), [True]


# -- movement --------------------------------------------------------------------------------
@rule(ops.concatenate)
def _concatenate(o, xs, bs, size):
    return emit_as_is(o, all_batched(xs, bs, size), axis=o.attrs["axis"] + 1), [True]


@rule(ops.pad)
def _pad(o, xs, bs, size):
    if bs[1]:
        return None             # a padding value per example
    a = o.attrs
    return emit_as_is(o, xs, low=(0,) + tuple(a["low"]), high=(0,) + tuple(a["high"]),
                      interior=(0,) + tuple(a["interior"])), [True]


@rule(ops.update_slice)
def _update_slice(o, xs, bs, size):
    a = o.attrs
    return emit_as_is(o, all_batched(xs, bs, size), starts=(0,) + tuple(a["starts"]),
                      steps=(1,) + tuple(a["steps"])), [True]


# -- indexing --------------------------------------------------------------------------------
@rule(ops.take)
def _take(o, xs, bs, size):
    x, idx = xs
    axis = o.attrs["axis"]
    if bs == [True, False]:
        return emit_as_is(o, xs, axis=axis + 1), [True]
    if bs == [False, True]:
        # the indices' batch lands where the taken axis was
        return _one(_move_to_front(emit_as_is(o, xs)[0], axis))
    return _one(_take_per_example(x, idx, axis + 1, size))


def _take_per_example(x, idx, axis: int, size: int):
    """Each example's indices into its own ``x``: one take from the examples' taken axes laid
    end to end, ``(B*N, ...)``, at index ``b*N + i``. An index out of its own example's range
    becomes ``B*N``, so the take still fails on it (not reading another example's row)."""
    shape = x._value.type.shape
    n, nd = shape[axis], len(shape)
    rest = [d for d in range(1, nd) if d != axis]
    flat = emit(x._trace, ops.transpose, [x], perm=(0, axis, *rest))
    flat = emit(x._trace, ops.reshape, [flat], shape=(size * n,) + tuple(shape[d] for d in rest))
    k = idx._value.type.ndim - 1
    i = idx.astype(np.int64)
    i = np.where(i < 0, i + n, i)
    offsets = (np.arange(size, dtype=np.int64) * n).reshape((size,) + (1,) * k)
    i = np.where((i >= 0) & (i < n), i + offsets, np.int64(size * n))
    out = emit(x._trace, ops.take, [flat, i], axis=0)      # (B, *I, *pre, *post)
    pre = axis - 1
    perm = ((0,) + tuple(range(1 + k, 1 + k + pre)) + tuple(range(1, 1 + k))
            + tuple(range(1 + k + pre, out._value.type.ndim)))
    return emit(x._trace, ops.transpose, [out], perm=perm)


def _scatter(o, xs, bs, size):
    if bs[1]:
        return None             # indices per example
    x, idx, upd = xs
    x, upd = all_batched([x, upd], [bs[0], bs[2]], size)
    return emit_as_is(o, [x, idx, upd], axis=o.attrs["axis"] + 1), [True]


RULES[ops.scatter] = RULES[ops.scatter_add] = _scatter


# -- contraction -----------------------------------------------------------------------------
@rule(ops.matmul)
def _matmul(o, xs, bs, size):
    """Batched on one side only, the batch joins that side's rows (or columns) in one
    matmul, rather than copying the other operand once per example."""
    a, b = xs
    if all(bs):
        return emit_as_is(o, xs), [True]
    trace = (a if bs[0] else b)._trace
    if bs[0]:                   # a: (B, *d, m, k) -> (*d, B*m, k)
        at = a._value.type
        *d, m, k = at.shape[1:]
        nd = len(d)
        moved = emit(trace, ops.transpose, [a], perm=tuple(range(1, nd + 1)) + (0, nd + 1,
                                                                               nd + 2))
        flat = emit(trace, ops.reshape, [moved], shape=tuple(d) + (size * m, k))
        out = emit(trace, ops.matmul, [flat, b])                  # (*d, B*m, n)
        n = out._value.type.shape[-1]
        out = emit(trace, ops.reshape, [out], shape=tuple(d) + (size, m, n))
        return _one(emit(trace, ops.transpose, [out],
                         perm=(nd,) + tuple(range(nd)) + (nd + 1, nd + 2)))
    # b: (B, *d, k, n) -> (*d, k, B*n)
    bt = b._value.type
    *d, k, n = bt.shape[1:]
    nd = len(d)
    moved = emit(trace, ops.transpose, [b], perm=tuple(range(1, nd + 1)) + (nd + 1, 0,
                                                                           nd + 2))
    flat = emit(trace, ops.reshape, [moved], shape=tuple(d) + (k, size * n))
    out = emit(trace, ops.matmul, [a, flat])                      # (*d, m, B*n)
    m = out._value.type.shape[-2]
    out = emit(trace, ops.reshape, [out], shape=tuple(d) + (m, size, n))
    return _one(emit(trace, ops.transpose, [out],
                     perm=(nd + 1,) + tuple(range(nd)) + (nd, nd + 2)))


# -- barriers: the values pass as they are ----------------------------------------------------
@rule(ops.optimization_barrier)
def _barrier(o, xs, bs, size):
    return emit_as_is(o, xs), list(bs)

