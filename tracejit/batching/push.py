"""vmap's transform: a Function's ops pushed again on batched values.

Every value is either unbatched (the per-example value, shared by the whole batch) or batched:
the same value with the batch as a new leading axis, ``(size,) + shape``. Keeping the batch at
axis 0 everywhere makes each op's rule a small edit of its attributes (an axis moves by one, a
shape gains ``size`` in front). An op none of whose operands is batched is emitted unchanged.

An op with no rule in ``rules.py`` (or a case its rule leaves alone: a ``call`` that carries a
user's derivative rule, a loop whose predicate differs per example) is mapped over the batch by
a ``scan``: one example per step, the op itself in the body. That is always right, and slower
than a rule, which vectorizes the batch.

The rules live in rules.py and control_rules.py, which fill ``RULES`` when the package is
imported.
"""
from __future__ import annotations

from ..ir import Function, ops
from ..ir.registry import rule_table
from ..ir.types import TensorType
from ..tracer.numpy.lifting import emit
from ..tracer.trace_state import Trace, current_trace
from ..tracer.tracer import Tracer

# op -> rule(op, operands, batched, size) -> (results, batched), or None: map over the batch
RULES, rule = rule_table()


def push(fn: Function, inputs: list[Tracer], batched: list[bool], size: int
         ) -> tuple[list[Tracer], list[bool]]:
    """Emit ``fn``'s ops into the current trace on ``inputs`` (those ``batched`` with the batch
    at axis 0). Returns (results, which of them are batched)."""
    trace = current_trace()
    env = dict(zip(fn.params, inputs))
    flags = dict(zip(fn.params, batched))
    for o in fn.ops:
        xs = [env[v] for v in o.operands]
        bs = [flags[v] for v in o.operands]
        start = len(trace.builder.ops)
        if not any(bs):
            outs, obs = emit_as_is(o, xs), [False] * len(o.results)
        else:
            rule = RULES.get(o.opdef)
            found = rule(o, xs, bs, size) if rule is not None else None
            outs, obs = found if found is not None else map_over_batch(o, xs, bs, size)
        for new in trace.builder.ops[start:]:
            new.loc = o.loc
        env.update(zip(o.results, outs))
        flags.update(zip(o.results, obs))
    return [env[r] for r in fn.results], [flags[r] for r in fn.results]


def emit_as_is(o, xs: list[Tracer], **attrs) -> list[Tracer]:
    """``o`` on new operands, its attributes (with ``attrs`` changed) and regions kept."""
    trace = current_trace()
    new = trace.builder.emit(o.opdef, [x._value for x in xs], loc=o.loc,
                             regions=list(o.regions) or None, **{**o.attrs, **attrs})
    return [Tracer(r, trace) for r in new.results]


def batched_type(t: TensorType, size: int) -> TensorType:
    return t.with_shape((size,) + tuple(t.shape))


def broadcast(x: Tracer, size: int) -> Tracer:
    """An unbatched value made batched: the same value for every example."""
    shape = tuple(x._value.type.shape)
    return emit(x._trace, ops.broadcast_in_dim, [x], shape=(size,) + shape,
                dims=tuple(range(1, len(shape) + 1)))


def all_batched(xs: list[Tracer], bs: list[bool], size: int) -> list[Tracer]:
    return [x if b else broadcast(x, size) for x, b in zip(xs, bs)]


def batch_function(fn: Function, batched: list[bool], size: int, force: list[bool] | None = None
                   ) -> tuple[Function, list[bool]]:
    """``fn`` as a Function of batched parameters where ``batched``; results ``force``d
    batched are broadcast if they come out unbatched. Returns (it, which results are
    batched)."""
    with Trace(f"{fn.name}_batched") as tr:
        inputs = [Tracer(tr.builder.param(batched_type(p.type, size) if b else p.type,
                                          p.name), tr)
                  for p, b in zip(fn.params, batched)]
        outs, obs = push(fn, inputs, list(batched), size)
        if force is not None:
            outs = [broadcast(x, size) if f and not b else x
                    for x, b, f in zip(outs, obs, force)]
            obs = [b or f for b, f in zip(obs, force)]
        return tr.finish([x._value for x in outs]), obs


def map_over_batch(o, xs: list[Tracer], bs: list[bool], size: int
                   ) -> tuple[list[Tracer], list[bool]]:
    """``o`` run once per example, in a ``scan`` over the batch: the unbatched operands are
    its consts, the batched ones its xs (their leading axis is the batch), the op's results
    its ys, stacked along a new leading axis: batched."""
    order = [i for i, b in enumerate(bs) if not b] + [i for i, b in enumerate(bs) if b]
    with Trace(f"{o.opdef.name}_per_example") as tr:
        params = {}
        for i in order:
            t = xs[i]._value.type
            params[i] = Tracer(tr.builder.param(t.with_shape(t.shape[1:]) if bs[i] else t), tr)
        outs = emit_as_is(o, [params[i] for i in range(len(xs))])
        body = tr.finish([x._value for x in outs])
    trace = current_trace()
    new = trace.builder.emit(ops.scan, [xs[i]._value for i in order], loc=o.loc,
                             regions=[body], consts=len(bs) - sum(bs), carries=0,
                             length=size, reverse=False)
    return [Tracer(r, trace) for r in new.results], [True] * len(new.results)
