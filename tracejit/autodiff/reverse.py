"""Reverse mode: Function -> Function that also computes cotangents of chosen parameters.

``vjp_function(F, wrt, ct_results)`` gives a Function taking F's parameters plus one cotangent
per chosen result and returning F's results plus the cotangents of the ``wrt`` parameters. The
forward ops come first, then the backward ops, in one Function: later passes optimize and fuse
them together, and a backward op may read any forward value.

Activity: a value carries a cotangent only if it is floating point and depends on a ``wrt``
parameter through differentiable ops. Integer and bool values, and non-differentiable ops
(comparisons, floor, argmax, ...), stop the gradient.

``call`` ops (from ``checkpoint``) are recomputed in the backward pass from their inputs, passed
through an ``optimization_barrier`` together with the incoming cotangents, so that CSE cannot
merge the recomputation with the forward copy and the recomputation cannot run before the
backward pass needs it. A ``call`` with a ``custom_vjp`` rule uses the user's fwd and bwd.
Control flow (``cond``, ``scan``, ``while_loop``) has rules of its own: control_rules.py.
"""
from __future__ import annotations

from typing import Sequence

from ..ir import Function, ops, verify
from ..ir.passes import dce
from ..tracer.trace_state import Trace, current_trace
from ..tracer.tracer import Tracer
from . import custom, custom_jvp
from .build import add_any, emit_call, emit_op, zeros
from .partials import PARTIALS, scale
from .vjp_rules import REGION_VJP_RULES, VJP_RULES

# Ops whose rule is part of the transform itself (several results, or a region).
STRUCTURAL = (ops.call, ops.optimization_barrier)


def is_float(v) -> bool:
    return v.type.dtype.is_float


def record(fn: Function, inputs: list[Tracer], wrt: Sequence[int]):
    """Emit fn's ops on ``inputs`` into the current trace; return (outputs, pullback), where
    ``pullback(result_cts)`` (None = zero) emits the backward ops and returns one cotangent per
    parameter (None where zero or inactive)."""
    env = dict(zip(fn.params, inputs))
    active = {fn.params[i] for i in wrt if is_float(fn.params[i])}
    tape = []
    for o in fn.ops:
        xs = [env[v] for v in o.operands]
        live = o.opdef.differentiable and any(v in active for v in o.operands)
        rule = custom.rule_for(o) if live and o.opdef is ops.call else None
        res = None
        if rule is None and live and o.opdef is ops.call:
            rule = custom_jvp.rule_for(o)       # (res: None; its backward transposes)
        if isinstance(rule, custom_jvp.JvpRule):
            outs = emit_op(current_trace(), o.opdef, xs, o.attrs, o.regions, o.loc)
        elif rule is not None:
            outs, res = rule.forward(xs, [v in active for v in o.operands], o.results)
        elif live and o.opdef in REGION_VJP_RULES:   # res: the op's own pullback
            outs, res = REGION_VJP_RULES[o.opdef](o, xs, [v in active for v in o.operands])
        else:
            outs = emit_op(current_trace(), o.opdef, xs, o.attrs, o.regions, o.loc)
        env.update(zip(o.results, outs))
        if live:
            active.update(r for r in o.results if is_float(r))
            tape.append((o, xs, outs, rule, res, [v in active for v in o.operands]))

    def pullback(result_cts: list) -> list:
        cts = {}
        for r, c in zip(fn.results, result_cts):
            if c is not None and r in active:
                cts[r] = add_any(cts.get(r), c)
        for o, xs, outs, rule, res, operand_active in reversed(tape):
            out_cts = [cts.pop(r, None) for r in o.results]
            if all(c is None for c in out_cts):
                continue
            builder = current_trace().builder
            start = len(builder.ops)
            in_cts = _backprop(o, xs, outs, out_cts, rule, res, operand_active)
            for new in builder.ops[start:]:
                new.loc = o.loc
            for v, c, a in zip(o.operands, in_cts, operand_active):
                if a and c is not None:
                    cts[v] = add_any(cts.get(v), c)
        return [cts.get(p) for p in fn.params]

    return [env[r] for r in fn.results], pullback


def _backprop(o, xs, outs, out_cts, rule, res, operand_active) -> list:
    if isinstance(rule, custom_jvp.JvpRule):
        return rule.transpose(xs, outs, out_cts, operand_active, record)
    if rule is not None:
        return rule.backward(res, out_cts, outs, xs)
    if o.opdef is ops.optimization_barrier:
        return out_cts
    if o.opdef in REGION_VJP_RULES:
        return res(out_cts)
    if o.opdef is ops.call and o.attrs["autocast"]:
        return _fixed_region_backprop(o, xs, out_cts, operand_active)
    if o.opdef is ops.call:
        # Rematerialize: recompute the body from barrier'd inputs, then differentiate it.
        ready = [c for c in out_cts if c is not None]
        fenced = emit_op(current_trace(), ops.optimization_barrier, xs + ready, {})[:len(xs)]
        wrt = [i for i, a in enumerate(operand_active) if a]
        _, pull = record(o.regions[0], fenced, wrt)
        return pull(out_cts)
    (ct,), (out,) = out_cts, outs
    if o.opdef in PARTIALS:
        return [scale(ct, p) for p in PARTIALS[o.opdef](*xs, out=out)]
    if o.opdef in VJP_RULES:
        return VJP_RULES[o.opdef](ct, *xs, out=out, **o.attrs)
    raise TypeError(f"tracejit: no reverse-mode rule for op {o.opdef.name} "
                    f"(at {o.loc or 'an unknown place'})")


def _fixed_region_backprop(o, xs, out_cts, operand_active) -> list:
    """The backward pass of a region a nested autocast fixed (amp/autocast.py): a region marked
    the same way, so that an enclosing autocast leaves the backward ops in the forward ones'
    dtypes too. It recomputes the body (no barrier: CSE merges the copies once inlined)."""
    body = o.regions[0]
    wrt = [i for i, a in enumerate(operand_active) if a]
    seeded = [i for i, c in enumerate(out_cts) if c is not None]
    grads = emit_call(vjp_function(body, wrt, seeded), xs + [out_cts[i] for i in seeded],
                      o.attrs, o.loc)[len(body.results):]
    cts = [None] * len(xs)
    for i, g in zip(wrt, grads):
        cts[i] = g
    return cts


def vjp_function(fn: Function, wrt: Sequence[int], ct_results: Sequence[int] | None = None
                 ) -> Function:
    """(params..., cotangents of results[ct_results]...) -> (results..., cotangents of
    params[wrt]...). ``ct_results`` defaults to every result."""
    if ct_results is None:
        ct_results = range(len(fn.results))
    ct_results = list(ct_results)
    with Trace(f"{fn.name}_vjp") as tr:
        inputs = [Tracer(tr.builder.param(p.type, p.name), tr) for p in fn.params]
        seeds = [Tracer(tr.builder.param(fn.results[i].type, f"ct{i}"), tr) for i in ct_results]
        outs, pullback = record(fn, inputs, wrt)
        result_cts = [None] * len(fn.results)
        for i, s in zip(ct_results, seeds):
            result_cts[i] = add_any(result_cts[i], s)
        cts = pullback(result_cts)
        grads = [cts[i] if cts[i] is not None else zeros(fn.params[i].type) for i in wrt]
        out = tr.finish([x._value for x in outs + grads])
    return verify(dce(out))
