"""Forward mode: Function -> Function that also computes tangents of its results.

``jvp_function(F, wrt)`` gives a Function taking F's parameters plus one tangent per ``wrt``
parameter and returning F's results plus one tangent per result. Each primal op is followed by
its tangent ops. Activity is as in reverse mode: only floating-point values reached through
differentiable ops carry tangents. A ``call`` (checkpoint, custom_vjp) stays a ``call``, of its
body's jvp, so that a later reverse pass still sees the checkpoint boundary. Control flow
(``cond``, ``while_loop``, ``scan``) becomes the same op over its regions' jvp: control_rules.py.
"""
from __future__ import annotations

from typing import Sequence

from ..ir import Function, ops, verify
from ..ir.passes import dce
from ..tracer.trace_state import Trace, current_trace
from ..tracer.tracer import Tracer
from . import custom_jvp
from .build import add_any, emit_op, zeros
from .jvp_rules import JVP_RULES, REGION_JVP_RULES
from .partials import PARTIALS, scale
from .reverse import is_float


def push(fn: Function, inputs: list[Tracer], tangents: list) -> tuple[list, list]:
    """Emit fn's primal and tangent ops into the current trace; ``tangents`` has one entry per
    parameter (None = zero). Returns (outputs, output tangents with None for zero)."""
    env = dict(zip(fn.params, inputs))
    tan = {p: t for p, t in zip(fn.params, tangents) if t is not None and is_float(p)}
    for o in fn.ops:
        xs = [env[v] for v in o.operands]
        ts = [tan.get(v) for v in o.operands]
        live = o.opdef.differentiable and any(t is not None for t in ts)
        if live and o.opdef is ops.call:
            outs, touts = _call(o, xs, ts)
        elif live and o.opdef in REGION_JVP_RULES:
            outs, touts = REGION_JVP_RULES[o.opdef](o, xs, ts)
        else:
            outs = emit_op(current_trace(), o.opdef, xs, o.attrs, o.regions, o.loc)
            touts = _tangents(o, xs, ts, outs) if live else [None] * len(outs)
        env.update(zip(o.results, outs))
        tan.update((r, t) for r, t in zip(o.results, touts) if t is not None and is_float(r))
    return [env[r] for r in fn.results], [tan.get(r) for r in fn.results]


def _tangents(o, xs, ts, outs) -> list:
    builder = current_trace().builder
    start = len(builder.ops)
    if o.opdef is ops.optimization_barrier:
        touts = list(ts)
    elif o.opdef in PARTIALS:
        total = None
        for t, p in zip(ts, PARTIALS[o.opdef](*xs, out=outs[0])):
            if t is not None:
                total = add_any(total, scale(t, p))
        touts = [total]
    elif o.opdef in JVP_RULES:
        touts = [JVP_RULES[o.opdef](ts, *xs, out=outs[0], **o.attrs)]
    else:
        raise TypeError(f"tracejit: no forward-mode rule for op {o.opdef.name} "
                        f"(at {o.loc or 'an unknown place'})")
    for new in builder.ops[start:]:
        new.loc = o.loc
    return touts


def _call(o, xs, ts):
    rule = custom_jvp.rule_for(o)
    if rule is not None:            # the user's rule, not the body's derivative
        return rule.apply(xs, ts)
    wrt = [i for i, t in enumerate(ts) if t is not None]
    body = jvp_function(o.regions[0], wrt)
    n = len(o.results)
    results = emit_op(current_trace(), ops.call, xs + [ts[i] for i in wrt], o.attrs, [body],
                      o.loc)
    return results[:n], results[n:]


def jvp_function(fn: Function, wrt: Sequence[int]) -> Function:
    """(params..., tangents of params[wrt]...) -> (results..., tangents of results...)."""
    wrt = list(wrt)
    with Trace(f"{fn.name}_jvp") as tr:
        inputs = [Tracer(tr.builder.param(p.type, p.name), tr) for p in fn.params]
        tangents = [None] * len(fn.params)
        for i in wrt:
            p = fn.params[i]
            tangents[i] = Tracer(tr.builder.param(p.type, f"t.{p.name or i}"), tr)
        outs, touts = push(fn, inputs, tangents)
        touts = [t if t is not None else zeros(r.type) for t, r in zip(touts, fn.results)]
        out = tr.finish([x._value for x in outs + touts])
    return verify(dce(out))
