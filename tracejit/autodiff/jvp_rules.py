"""Forward-mode rules for the ops that are not plain elementwise math (those are in
partials.py): ``rule(ts, *operands, out, **attrs) -> tangent of out or None``; ``ts`` holds one
tangent per operand, None where it is zero.

Ops linear in some operands (layout ops, ``reduce_sum``, ``cumsum``, ``take``, ``scatter_add``,
``pad``, ``concatenate``, ``where``) apply themselves to the tangents: see :func:`linear`. Tie
conventions match vjp_rules.py (ties of reduce_max/min share the tangent equally); ``cumprod``
is exact with zeros at every order, ``sort`` gathers the tangent through the sorting permutation.
"""
from __future__ import annotations

from ..ir import dtypes, ops
from ..ir.registry import rule_table
from ..tracer.numpy.gather import take_along_axis
from ..tracer.numpy.lifting import astype
from .build import add_any, expand, kept_dims, mask, op, sum_axes, zeros_like
from .vjp_rules import cumprod_levels, prod_partial, shift

JVP_RULES, jvp_rule = rule_table()
# Ops holding regions (control flow, control_rules.py): ``rule(op, operands, tangents) ->
# (results, result tangents)``; the rule emits the op itself, over the jvp of its regions.
REGION_JVP_RULES, region_jvp_rule = rule_table()


def linear(opdef, primal=()):
    """The op applied to the tangents of its linear operands (operands listed in ``primal``,
    such as indices or a condition, are passed as they are)."""
    def rule(ts, *xs, out, **attrs):
        if all(t is None for i, t in enumerate(ts) if i not in primal):
            return None
        args = [x if i in primal else (t if t is not None else zeros_like(x))
                for i, (t, x) in enumerate(zip(ts, xs))]
        return op(opdef, *args, **attrs)
    JVP_RULES[opdef] = rule
    return rule


for _opdef in (ops.broadcast_in_dim, ops.reshape, ops.transpose, ops.slice, ops.rev, ops.pad,
               ops.concatenate, ops.reduce_sum, ops.cumsum, ops.window):
    linear(_opdef)
linear(ops.take, primal=(1,))
linear(ops.scatter_add, primal=(1,))
linear(ops.scatter, primal=(1,))
linear(ops.update_slice)
linear(ops.where, primal=(0,))


@jvp_rule(ops.convert)
def _(ts, x, out, dtype):
    (t,) = ts
    return (astype(t, out.dtype)
            if dtypes.is_float_dtype(out.dtype) and dtypes.is_float_dtype(x.dtype) else None)


def _extreme_jvp(ts, x, out, axes):
    kept = kept_dims(x.ndim, axes)
    hit = mask(x == expand(out, x.shape, kept), x)
    return sum_axes(ts[0] * hit, axes) / sum_axes(hit, axes)


jvp_rule(ops.reduce_max)(_extreme_jvp)
jvp_rule(ops.reduce_min)(_extreme_jvp)


@jvp_rule(ops.reduce_prod)
def _(ts, x, out, axes):
    return sum_axes(ts[0] * prod_partial(x, axes), axes)


@jvp_rule(ops.cumprod)
def _(ts, x, out, axis):
    (t,) = ts
    for c, d in cumprod_levels(x, axis):
        t = t * shift(c, d, axis, 1) + c * shift(t, d, axis, 0)
    return t


@jvp_rule(ops.sort)
def _(ts, x, out, axis, kind):
    return take_along_axis(ts[0], op(ops.argsort, x, axis=axis, kind=kind), axis)


@jvp_rule(ops.matmul)
def _(ts, a, b, out):
    ta, tb = ts
    return add_any(None if ta is None else op(ops.matmul, ta, b),
                   None if tb is None else op(ops.matmul, a, tb))
