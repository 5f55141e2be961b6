"""Derivatives of structured control flow (ir/control_ops.py): ``cond``, ``while_loop``, ``scan``.

Every rule is IR -> IR: it emits control ops whose regions are new Functions, made by running
the transforms themselves (``forward.push``, ``reverse.record``) over the op's own regions in a
fresh trace (:func:`_region`). A new region closes over nothing: every value it reads (primal,
tangent, cotangent) is one of its parameters, i.e. an operand of the op.

Forward mode, all three ops: the op over the jvp of its regions, tangents riding along as extra
operands: ``cond`` branches take (operands, tangents) and return (results, tangents);
``while_loop`` carries (carries, tangents), its cond_fn ignoring the tangents; ``scan`` takes
(consts, dconsts), (carries, dcarries), (xs, dxs) and gives ys and dys. Only floating-point
values reachable from a tangent through differentiable ops carry one (as in forward.py); a
loop's carries are found by a fixpoint, since a carry with a zero tangent on entry gets a
nonzero one once the body mixes an active value into it.

Reverse mode:
- ``cond``: the forward cond as it is; the backward pass is a cond over the vjp of each branch,
  which recomputes its branch's forward from the operands. No residuals cross the op (simple;
  the price is running the taken branch twice, as ``checkpoint`` does).
- ``scan``: the body's vjp is split (split.py) into a forward part, the forward scan's body,
  which also stacks the residuals as extra ys, and a backward part, the body of a scan the
  other way round over (stacked residuals, cotangents of ys), carrying the carries' cotangent
  and accumulating the consts' cotangents; its ys are the xs' cotangents. No forward op runs
  twice, as in JAX. Residuals the scan has anyway (x slices, ys) are not stacked again, and
  those of the consts alone are computed once, before the loop. ``SCAN_STORES_RESIDUALS =
  False`` selects the older rule, which stacks only the incoming carries and recomputes the
  body's forward in the backward scan; a body wrapped in ``checkpoint`` recomputes either way
  (its residuals are the call's inputs).
- ``while_loop``: its trip count is not known before it runs, so there is nothing to store
  the carries into; an error, as in JAX, suggests fori_loop with static bounds or scan. Only
  a cotangent reaching a carry that depends on an active value is one: an active value read
  by cond_fn alone, or such a carry left unused, gives the loop a zero derivative.
"""
from __future__ import annotations

from ..ir import Function, ops, verify
from ..ir.control_ops import scan_parts
from ..ir.passes import dce
from ..tracer.trace_state import Trace, current_trace
from ..tracer.tracer import Tracer
from .build import add_any, emit_op, zeros
from .forward import push
from .jvp_rules import region_jvp_rule
from .reverse import is_float, record, vjp_function
from .split import split_vjp
from .vjp_rules import region_vjp_rule


# -- helpers ----------------------------------------------------------------------------------

def _region(name: str, types: list, build) -> Function:
    """A Function traced from ``build(params) -> results`` on parameters of ``types`` (a
    result that is zero must be a real zero: :func:`_or_zero`)."""
    with Trace(name) as tr:
        params = [Tracer(tr.builder.param(t), tr) for t in types]
        results = build(params)
        fn = tr.finish([x._value for x in results])
    assert not tr.captured, f"{name} closes over a value of the enclosing trace"
    return verify(dce(fn))


def _quiet(fn: Function) -> Function:
    """fn without its own result-less side effects (``debug_print``), for a backward pass
    that recomputes it: the forward pass printed already (a cond's taken branch printed
    twice under grad; JAX's prints once)."""
    kept = [o for o in fn.ops if not (o.opdef.side_effect and not o.results)]
    return fn if len(kept) == len(fn.ops) else Function(fn.name, fn.params, kept, fn.results)


def _or_zero(value, type):
    return value if value is not None else zeros(type)


def _reaches(fn: Function, active: set[int]) -> list[bool]:
    """Which of fn's results depend on the parameters at ``active`` through differentiable
    float ops: the activity rule of reverse.py and forward.py, without emitting anything."""
    live = {fn.params[i] for i in active if is_float(fn.params[i])}
    for o in fn.ops:
        if o.opdef.differentiable and any(v in live for v in o.operands):
            live.update(r for r in o.results if is_float(r))
    return [r in live for r in fn.results]


def _active_carries(body: Function, fixed: set[int], start: int, entering: list[bool]
                    ) -> list[bool]:
    """The loop carries that carry a derivative: those active on entry, plus (to a fixpoint)
    those the body makes depend on an active parameter. ``fixed``: the active non-carry
    parameters; the carries are the parameters from ``start`` and the body's first results."""
    act = list(entering)
    while True:
        params = fixed | {start + j for j, a in enumerate(act) if a}
        new = [a or r for a, r in zip(act, _reaches(body, params))]
        if new == act:
            return act
        act = new


def _place(values: list, positions: list[int], size: int) -> list:
    """``values`` put at ``positions`` of a list of ``size`` Nones."""
    out = [None] * size
    for i, v in zip(positions, values):
        out[i] = v
    return out


def _cut(seq: list, sizes: list[int]) -> list[list]:
    parts, at = [], 0
    for n in sizes:
        parts.append(list(seq[at:at + n]))
        at += n
    return parts


# -- forward mode -----------------------------------------------------------------------------

@region_jvp_rule(ops.cond)
def _(o, xs, ts):
    index, operands, tangents = xs[0], xs[1:], ts[1:]
    wrt = [i for i, t in enumerate(tangents) if t is not None]
    types = [p.type for p in o.regions[0].params]
    out_active = [any(col) for col in zip(*(_reaches(b, set(wrt)) for b in o.regions))]

    def jvp_of(branch):
        def build(ps):
            prim, tans = _cut(ps, [len(types), len(wrt)])
            outs, touts = push(branch, prim, _place(tans, wrt, len(types)))
            return outs + [_or_zero(t, r.type) for t, r, a in
                           zip(touts, branch.results, out_active) if a]
        return _region(f"{branch.name}_jvp", types + [types[i] for i in wrt], build)

    n = len(o.results)
    res = emit_op(current_trace(), ops.cond, [index] + operands + [tangents[i] for i in wrt],
                  {}, [jvp_of(b) for b in o.regions], o.loc)
    return res[:n], _place(res[n:], [j for j in range(n) if out_active[j]], n)


@region_jvp_rule(ops.while_loop)
def _(o, xs, ts):
    k = o.attrs["consts"]
    cond_fn, body_fn = o.regions
    m = len(xs) - k
    tc = [i for i in range(k) if ts[i] is not None]
    act = _active_carries(body_fn, set(tc), k, [t is not None for t in ts[k:]])
    tcar = [j for j in range(m) if act[j]]
    types = [p.type for p in body_fn.params]
    new_types = (types[:k] + [types[i] for i in tc] + types[k:]
                 + [types[k + j] for j in tcar])

    def unpack(ps):
        consts, dconsts, carries, dcarries = _cut(ps, [k, len(tc), m, len(tcar)])
        return (consts + carries,
                _place(dconsts + dcarries, tc + [k + j for j in tcar], k + m))

    def cond_build(ps):
        prim, _ = unpack(ps)
        return push(cond_fn, prim, [None] * len(prim))[0]

    def body_build(ps):
        prim, tangents = unpack(ps)
        outs, touts = push(body_fn, prim, tangents)
        return outs + [_or_zero(touts[j], types[k + j]) for j in tcar]

    operands = (xs[:k] + [ts[i] for i in tc] + xs[k:]
                + [_or_zero(ts[k + j], types[k + j]) for j in tcar])
    res = emit_op(current_trace(), ops.while_loop, operands, {"consts": k + len(tc)},
                  [_region(f"{cond_fn.name}_jvp", new_types, cond_build),
                   _region(f"{body_fn.name}_jvp", new_types, body_build)], o.loc)
    return res[:m], _place(res[m:], tcar, m)


@region_jvp_rule(ops.scan)
def _(o, xs, ts):
    n, m = o.attrs["consts"], o.attrs["carries"]
    (body,) = o.regions
    nx, ny = len(xs) - n - m, len(body.results) - m
    tc = [i for i in range(n) if ts[i] is not None]
    tx = [k for k in range(nx) if ts[n + m + k] is not None]
    fixed = set(tc) | {n + m + k for k in tx}
    act = _active_carries(body, fixed, n, [t is not None for t in ts[n:n + m]])
    tcar = [j for j in range(m) if act[j]]
    y_active = _reaches(body, fixed | {n + j for j in tcar})[m:]
    ty = [j for j in range(ny) if y_active[j]]
    types = [p.type for p in body.params]
    new_types = (types[:n] + [types[i] for i in tc] + types[n:n + m]
                 + [types[n + j] for j in tcar] + types[n + m:]
                 + [types[n + m + k] for k in tx])

    def build(ps):
        c, dc, car, dcar, x, dx = _cut(ps, [n, len(tc), m, len(tcar), nx, len(tx)])
        tangents = _place(dc + dcar + dx, tc + [n + j for j in tcar] + [n + m + k for k in tx],
                          n + m + nx)
        outs, touts = push(body, c + car + x, tangents)
        r = body.results
        return (outs[:m] + [_or_zero(touts[j], r[j].type) for j in tcar] + outs[m:]
                + [_or_zero(touts[m + j], r[m + j].type) for j in ty])

    consts, carries, xseq = scan_parts(xs, n, m)
    operands = (consts + [ts[i] for i in tc] + carries
                + [_or_zero(ts[n + j], types[n + j]) for j in tcar]
                + xseq + [ts[n + m + k] for k in tx])
    attrs = dict(o.attrs, consts=n + len(tc), carries=m + len(tcar))
    res = emit_op(current_trace(), ops.scan, operands, attrs,
                  [_region(f"{body.name}_jvp", new_types, build)], o.loc)
    carries_out, dcarries, ys, dys = _cut(res, [m, len(tcar), ny, len(ty)])
    return carries_out + ys, _place(dcarries, tcar, m) + _place(dys, ty, ny)


# -- reverse mode -----------------------------------------------------------------------------
# rule(op, operands, which operands are active) -> (results, pullback(result cotangents) ->
# one cotangent per operand, None for zero).

@region_vjp_rule(ops.cond)
def _(o, xs, active):
    outs = emit_op(current_trace(), ops.cond, xs, {}, o.regions, o.loc)
    types = [p.type for p in o.regions[0].params]
    wrt = [i for i, a in enumerate(active[1:]) if a]

    def pullback(out_cts):
        seeds = [j for j, c in enumerate(out_cts) if c is not None]

        def vjp_of(branch):
            def build(ps):
                prim, cts = _cut(ps, [len(types), len(seeds)])
                _, pull = record(_quiet(branch), prim, wrt)
                grads = pull(_place(cts, seeds, len(branch.results)))
                return [_or_zero(grads[i], types[i]) for i in wrt]
            return _region(f"{branch.name}_vjp", types + [o.results[j].type for j in seeds],
                           build)

        grads = emit_op(current_trace(), ops.cond, xs + [out_cts[j] for j in seeds], {},
                        [vjp_of(b) for b in o.regions], o.loc)
        return [None] + _place(grads, wrt, len(types))

    return outs, pullback


@region_vjp_rule(ops.while_loop)
def _(o, xs, active):
    # Only a cotangent reaching a carry that depends on an active operand is an error: an
    # active operand read by cond_fn alone (the trip count is piecewise constant in it), or
    # a differentiable carry nobody uses, gives the loop a zero derivative, as in JAX.
    k = o.attrs["consts"]
    act = _active_carries(o.regions[1], {i for i in range(k) if active[i]}, k,
                          [bool(a) for a in active[k:]])
    outs = emit_op(current_trace(), ops.while_loop, xs, o.attrs, o.regions, o.loc)

    def pullback(out_cts):
        if any(c is not None and a for c, a in zip(out_cts, act)):
            raise ValueError(
                f"tracejit: reverse-mode differentiation does not work through a while_loop "
                f"(at {o.loc or 'an unknown place'}): its trip count is only known when it "
                "runs, so there is no static number of iterations to store for the backward "
                "pass.\nWhat to do: use fori_loop with static (Python int) bounds, or scan, "
                "which reverse mode supports; forward mode (jvp, jacfwd) works through "
                "while_loop.")
        return [None] * len(xs)

    return outs, pullback


# Which reverse scan: True stores the body's residuals per iteration (JAX's default: no forward
# op runs twice); False stores only the incoming carries and recomputes the body's forward in
# the backward scan (less memory, two more GEMMs per step of an RNN). A body wrapped in
# ``checkpoint`` recomputes either way: its residuals are the call's inputs.
SCAN_STORES_RESIDUALS = True


@region_vjp_rule(ops.scan)
def _(o, xs, active):
    return (_scan_vjp_storing if SCAN_STORES_RESIDUALS else _scan_vjp_recomputing)(o, xs, active)


def _scan_activity(body: Function, n: int, m: int, active: list[bool]):
    """(tc, tcar, tx): the active consts, carries (to the body's fixpoint) and xs."""
    nx = len(body.params) - n - m
    tc = [i for i in range(n) if active[i]]
    tx = [k for k in range(nx) if active[n + m + k]]
    act = _active_carries(body, set(tc) | {n + m + k for k in tx}, n, active[n:n + m])
    return tc, [j for j in range(m) if act[j]], tx


def _depends(fn: Function, sources) -> set:
    """The values of fn that depend on ``sources`` through any op."""
    seen = set(sources)
    for o in fn.ops:
        if any(v in seen for v in o.operands):
            seen.update(o.results)
    return seen


def _producers(body_ops: list, results: list) -> list:
    """The ops of ``body_ops`` that ``results`` are computed from, in order. Unlike dce, a
    side effect not needed is left out: a ``debug_print`` of the carry in a scan body runs in
    the forward scan; kept here, before the loop, it read a carry there is no value of
    (a KeyError under grad)."""
    live, kept = set(results), []
    for op in reversed(body_ops):
        if any(r in live for r in op.results):
            kept.append(op)
            live.update(op.operands)
    return kept[::-1]


def _emit(body_ops: list, env: dict, results: list) -> list:
    """Emit ``body_ops`` into the current trace, reading operands through ``env`` (value ->
    Tracer, extended as it goes); return the Tracers of ``results``."""
    for op in body_ops:
        outs = emit_op(current_trace(), op.opdef, [env[v] for v in op.operands], op.attrs,
                       op.regions or (), op.loc)
        env.update(zip(op.results, outs))
    return [env[v] for v in results]


def _scan_vjp_storing(o, xs, active):
    """The body's vjp split (split.py) into a forward part, the forward scan's body, which also
    stacks the residuals as extra ys, and a backward part, the backward scan's body, over the
    stacked residuals and the cotangents. A residual is not stacked when the scan has it
    already: an x slice (the backward scan reads xs) or a y of the body (it reads the ys); one
    that depends on the consts only is computed once, before the loop, and is a const of the
    backward scan."""
    n, m, rev = (o.attrs[a] for a in ("consts", "carries", "reverse"))
    (body,) = o.regions
    nx, ny = len(body.params) - n - m, len(body.results) - m
    tc, tcar, tx = _scan_activity(body, n, m, active)
    wrt = tc + [n + j for j in tcar] + [n + m + k for k in tx]
    ty = [j for j, a in enumerate(_reaches(body, set(wrt))[m:]) if a]
    split = split_vjp(vjp_function(body, wrt, tcar + [m + j for j in ty]),
                      len(body.params), len(body.results))
    fwd, residuals = split.forward, split.residuals
    params, primal = fwd.params, fwd.results[:m + ny]
    varying = _depends(fwd, params[n:])
    hoisted = [r for r in residuals if r not in varying]
    sliced = [r for r in residuals if r in varying]
    x_of = {p: k for k, p in enumerate(params[n + m:])}
    y_of = {y: j for j, y in enumerate(primal[m:])}
    stacked = [r for r in sliced if r not in x_of and r not in y_of]

    stacking = verify(dce(Function(body.name, params, fwd.ops, primal + stacked)))
    res = emit_op(current_trace(), ops.scan, xs, o.attrs, [stacking], o.loc)
    outs, stacks = res[:m + ny], dict(zip(stacked, res[m + ny:]))
    once = _emit(_producers(fwd.ops, hoisted), dict(zip(params[:n], xs[:n])), hoisted)
    sequences = [xs[n + m + x_of[r]] if r in x_of else outs[m + y_of[r]] if r in y_of
                 else stacks[r] for r in sliced]
    # The backward part's ops that read hoisted residuals and nothing that varies (1 / w, a
    # weight's transpose) run once, before the backward scan, too.
    bwd = split.backward
    as_param = dict(zip(residuals, bwd.params))
    moving = _depends(bwd, [as_param[r] for r in sliced] + bwd.params[len(residuals):])
    pinned = _depends(bwd, [as_param[r] for r in hoisted]) - moving
    before = [op for op in bwd.ops                      # with the constants they read
              if op.results and not any(r in moving for r in op.results)]
    inside = [op for op in bwd.ops if not (op.results and all(r in pinned for r in op.results))]
    invariant = list(dict.fromkeys(v for v in [u for op in inside for u in op.operands]
                                   + list(bwd.results) if v in pinned))

    def pullback(out_cts):
        types = [p.type for p in body.params]
        bwd_types = ([v.type for v in invariant] + [types[n + j] for j in tcar]
                     + [types[i] for i in tc] + [r.type for r in sliced]
                     + [body.results[m + j].type for j in ty])

        def build(ps):
            h, dcar, acc, r, dy = _cut(ps, [len(invariant), len(tcar), len(tc), len(sliced),
                                            len(ty)])
            env = (dict(zip(invariant, h)) | {as_param[v]: x for v, x in zip(sliced, r)}
                   | dict(zip(bwd.params[len(residuals):], dcar + dy)))
            dconsts, dcarries, dxs = _cut(_emit(inside, env, bwd.results),
                                          [len(tc), len(tcar), len(tx)])
            return dcarries + [a + d for a, d in zip(acc, dconsts)] + dxs

        pre = _emit(before, {as_param[r]: x for r, x in zip(hoisted, once)}, invariant)
        operands = (pre + [_or_zero(out_cts[j], types[n + j]) for j in tcar]
                    + [zeros(types[i]) for i in tc] + sequences
                    + [_or_zero(out_cts[m + j], o.results[m + j].type) for j in ty])
        attrs = dict(o.attrs, consts=len(invariant), carries=len(tcar) + len(tc),
                     reverse=not rev)
        back = emit_op(current_trace(), ops.scan, operands, attrs,
                       [_region(f"{body.name}_bwd", bwd_types, build)], o.loc)
        dcarries, dconsts, dxs = _cut(back, [len(tcar), len(tc), len(tx)])
        return _place(dconsts, tc, n) + _place(dcarries, tcar, m) + _place(dxs, tx, nx)

    return outs, pullback


def _scan_vjp_recomputing(o, xs, active):
    """The forward scan also stacks each iteration's incoming carries; the backward scan's body
    is the vjp of the body, recomputing the body's forward from the stored carries."""
    n, m, rev = (o.attrs[a] for a in ("consts", "carries", "reverse"))
    (body,) = o.regions
    ny = len(body.results) - m
    stacking = Function(body.name, body.params, body.ops,
                        list(body.results) + list(body.params[n:n + m]))
    res = emit_op(current_trace(), ops.scan, xs, o.attrs, [stacking], o.loc)
    outs, stacked = res[:m + ny], res[m + ny:]

    def pullback(out_cts):
        consts, _, xseq = scan_parts(xs, n, m)
        nx = len(xseq)
        tc, tcar, tx = _scan_activity(body, n, m, active)
        seeds = [j for j in range(ny) if out_cts[m + j] is not None]
        wrt = tc + [n + j for j in tcar] + [n + m + k for k in tx]
        types = [p.type for p in body.params]
        bwd_types = (types[:n] + [types[n + j] for j in tcar] + [types[i] for i in tc]
                     + types[n:] + [body.results[m + j].type for j in seeds])

        def build(ps):
            c, dcar, acc, car, x, dy = _cut(ps, [n, len(tcar), len(tc), m, nx, len(seeds)])
            _, pull = record(body, c + car + x, wrt)
            g = pull(_place(dcar, tcar, m) + _place(dy, seeds, ny))
            return ([_or_zero(g[n + j], types[n + j]) for j in tcar]
                    + [add_any(a, g[i]) for a, i in zip(acc, tc)]
                    + [_or_zero(g[n + m + k], types[n + m + k]) for k in tx])

        operands = (consts + [_or_zero(out_cts[j], types[n + j]) for j in tcar]
                    + [zeros(types[i]) for i in tc] + stacked + xseq
                    + [out_cts[m + j] for j in seeds])
        attrs = dict(o.attrs, carries=len(tcar) + len(tc), reverse=not rev)
        back = emit_op(current_trace(), ops.scan, operands, attrs,
                       [_region(f"{body.name}_vjp", bwd_types, build)], o.loc)
        dcarries, dconsts, dxs = _cut(back, [len(tcar), len(tc), len(tx)])
        return (_place(dconsts, tc, n) + _place(dcarries, tcar, m) + _place(dxs, tx, nx))

    return outs, pullback
