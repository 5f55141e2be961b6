"""Batching rules of the ops that hold regions: ``call``, ``cond``, ``while_loop``, ``scan``.

A region is batched as a Function of its own (push.batch_function). A loop's carries are
batched where its operands are, and also where one step makes them so (a carry that starts
shared and meets a batched value): found by batching the body until that set stops growing.
"""
from __future__ import annotations

import numpy as np

from ..autodiff.custom import rule_for as vjp_rule_for
from ..autodiff.custom_jvp import rule_for as jvp_rule_for
from ..ir import ops
from ..ir.control_ops import scan_parts
from ..tracer.numpy.lifting import emit
from ..tracer.trace_state import Trace, current_trace
from ..tracer.tracer import Tracer
from .push import batch_function, broadcast, push, rule


def _emit(o, xs, regions, **attrs) -> list[Tracer]:
    trace = current_trace()
    new = trace.builder.emit(o.opdef, [x._value for x in xs], loc=o.loc, regions=regions,
                             **{**o.attrs, **attrs})
    return [Tracer(r, trace) for r in new.results]


@rule(ops.call)
def _call(o, xs, bs, size):
    if vjp_rule_for(o) is not None or jvp_rule_for(o) is not None:
        return None         # the user's derivative rule is for one example's types
    body, obs = batch_function(o.regions[0], bs, size)
    return _emit(o, xs, [body]), obs


@rule(ops.cond)
def _cond(o, xs, bs, size):
    index, *operands = xs
    branches = o.regions
    if not bs[0]:
        found = [batch_function(b, bs[1:], size)[1] for b in branches]
        force = [any(col) for col in zip(*found)]
        batched = [batch_function(b, bs[1:], size, force)[0] for b in branches]
        return _emit(o, xs, batched), force
    if any(_may_fail(b) for b in branches):
        return None         # each example runs only its own branch: one cond per example
    # An index per example: every branch runs on the whole batch, and each example keeps its
    # own branch's results (the index clamped into range, as cond does), as in jax.vmap.
    results = [push(b, operands, bs[1:], size) for b in branches]
    trace = current_trace()
    last = len(branches) - 1
    outs = [broadcast(x, size) if not b else x
            for x, b in zip(*results[last])]
    for k in range(last - 1, -1, -1):
        chosen = emit(trace, ops.le, [index, _const(trace, index, k)])
        for j, (x, b) in enumerate(zip(*results[k])):
            x = x if b else broadcast(x, size)
            shape = tuple(x._value.type.shape)
            mask = emit(trace, ops.broadcast_in_dim, [chosen], shape=shape, dims=(0,))
            outs[j] = emit(trace, ops.where, [mask, x, outs[j]])
    return outs, [True] * len(outs)


# Ops that may raise on the values an example sends them (NumPy's LinAlgError for a singular
# or not positive definite matrix, or a NaN in eigh/svd; IndexError for an index out of range;
# ValueError for an integer to a negative power)
_RAISING = frozenset({ops.solve, ops.cholesky, ops.eigh, ops.svd})
_INDEXED = frozenset({ops.take, ops.scatter, ops.scatter_add})


def _may_fail(fn) -> bool:
    """Whether running ``fn`` on an example that does not take this branch could fail, not
    end, or be seen: an op that raises on some values (a take at an index the predicate
    guards against, ``inv`` of the singular matrix it avoids), a while_loop (its predicate
    may never turn false there), an effect (debug_print would print the branch not taken).
    Such a cond runs once per example, its own branch only, as a loop over examples does
    (jax.vmap runs every branch: its gathers clamp, its solves give NaN instead)."""
    constants = set()       # indices the tracer checked against the shape while tracing
    for o in fn.ops:
        if o.opdef is ops.constant or (o.opdef.category == "layout"
                                       and all(v in constants for v in o.operands)):
            constants.update(o.results)
        if (o.opdef in _RAISING or o.opdef is ops.while_loop or o.opdef.side_effect
                or o.opdef in _INDEXED and o.operands[1] not in constants
                or o.opdef is ops.power and o.results[0].type.dtype.is_int
                and o.operands[1] not in constants
                or any(_may_fail(r) for r in o.regions)):
            return True
    return False


def _const(trace, like, value):
    dtype = like._value.type.dtype.np
    c = emit(trace, ops.constant, [], value=np.asarray(value, dtype))
    return emit(trace, ops.broadcast_in_dim, [c], shape=tuple(like._value.type.shape), dims=())


def _carries(body, fixed: list[bool], carries: list[bool], size, tail: list[bool] = ()):
    """The carries' batched flags once a step leaves them unchanged: ``body`` takes
    fixed + carries + tail and returns the carries first."""
    carries = list(carries)
    while True:
        obs = batch_function(body, fixed + carries + list(tail), size)[1]
        grown = [c or b for c, b in zip(carries, obs)]
        if grown == carries:
            return carries
        carries = grown


@rule(ops.while_loop)
def _while_loop(o, xs, bs, size):
    k = o.attrs["consts"]
    cond_fn, body_fn = o.regions
    carries = _carries(body_fn, bs[:k], bs[k:], size)
    flags = bs[:k] + carries
    cond_b, (pred_batched,) = batch_function(cond_fn, flags, size)
    if pred_batched:
        if _may_fail(body_fn) or _divides(body_fn):
            return None     # one loop per example: each stops at its own step
        return _while_masked(o, xs, bs, size)
    body_b, _ = batch_function(body_fn, flags, size, carries)
    operands = xs[:k] + [broadcast(x, size) if c and not b else x
                         for x, b, c in zip(xs[k:], bs[k:], carries)]
    return _emit(o, operands, [cond_b, body_b]), carries


_DIVISIONS = frozenset({ops.floor_divide, ops.remainder, ops.fmod})


def _divides(fn) -> bool:
    """An integer division by a computed value: a finished example's carries, stepped on,
    may reach a zero divisor its own loop never divides by."""
    return any(o.opdef in _DIVISIONS and o.results[0].type.dtype.is_int
               or any(_divides(r) for r in o.regions) for o in fn.ops)


def _while_masked(o, xs, bs, size):
    """A while_loop whose predicate differs per example, as jax.vmap runs it: one loop while
    any example's predicate holds, each step keeping the carries of the examples whose own
    predicate is false (every carry batched). Only for bodies that cannot fail or be seen on
    the examples that are done (``_may_fail``): those go one loop per example."""
    k = o.attrs["consts"]
    cond_fn, body_fn = o.regions
    flags = bs[:k] + [True] * (len(xs) - k)
    operands = xs[:k] + [x if b else broadcast(x, size) for x, b in zip(xs[k:], bs[k:])]
    types = [x._value.type for x in operands]

    def region(name, finish):
        with Trace(f"{name}_batched") as tr:
            params = [Tracer(tr.builder.param(t), tr) for t in types]
            (pred,), (pb,) = push(cond_fn, params, flags, size)
            pred = pred if pb else broadcast(pred, size)
            return tr.finish([x._value for x in finish(params, pred)])

    def any_holds(params, pred):
        return [emit(pred._trace, ops.reduce_max, [pred], axes=(0,))]

    def step(params, pred):
        new, nb = push(body_fn, params, flags, size)
        out = []
        for x, b, old in zip(new, nb, params[k:]):
            x = x if b else broadcast(x, size)
            shape = tuple(x._value.type.shape)
            keep = emit(pred._trace, ops.broadcast_in_dim, [pred], shape=shape, dims=(0,))
            out.append(emit(pred._trace, ops.where, [keep, x, old]))
        return out

    regions = [region(cond_fn.name, any_holds), region(body_fn.name, step)]
    return _emit(o, operands, regions), [True] * (len(xs) - k)


@rule(ops.scan)
def _scan(o, xs, bs, size):
    n, m = o.attrs["consts"], o.attrs["carries"]
    (body,) = o.regions
    fixed_b, carry_b, xs_b = scan_parts(bs, n, m)
    carries = _carries(body, fixed_b, carry_b, size, xs_b)
    body_b, obs = batch_function(body, fixed_b + carries + xs_b, size,
                                 carries + [False] * (len(body.results) - m))
    fixed, carry, seqs = scan_parts(xs, n, m)
    trace = current_trace()
    carry = [broadcast(x, size) if c and not b else x
             for x, b, c in zip(carry, carry_b, carries)]
    # a batched xs is (B, length, ...): the scan walks its axis 1, so it moves to the front
    seqs = [emit(trace, ops.transpose, [x], perm=(1, 0) + tuple(
        range(2, x._value.type.ndim))) if b else x for x, b in zip(seqs, xs_b)]
    results = _emit(o, fixed + carry + seqs, [body_b])
    ys = [emit(trace, ops.transpose, [y], perm=(1, 0) + tuple(range(2, y._value.type.ndim)))
          if b else y for y, b in zip(results[m:], obs[m:])]
    return results[:m] + ys, carries + obs[m:]
