"""Split a vjp Function into a forward and a backward Function (partial evaluation).

Ops that depend on no cotangent form the forward Function: primal inputs -> (results,
residuals); the rest form the backward Function: (residuals, cotangents) -> parameter
cotangents. The residuals are exactly what stays alive between the two passes, which is what
``vjp`` keeps in its closure and what checkpointing reduces. Ops that depend on no input at all
(constants) are recomputed in the backward Function rather than carried as residuals.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Function, Op, Value, ops
from ..ir.passes import dce


@dataclass
class Split:
    forward: Function     # primal inputs -> (results..., residuals...)
    backward: Function    # (residuals..., cotangents...) -> cotangents of wrt params
    num_results: int      # how many of forward's results are the primal function's results

    @property
    def residuals(self) -> list[Value]:
        return self.forward.results[self.num_results:]

    @property
    def residual_bytes(self) -> int:
        return sum(v.type.size * v.type.dtype.np.itemsize for v in self.residuals)


def split_vjp(g: Function, num_inputs: int, num_results: int) -> Split:
    """``g`` from vjp_function: its first ``num_inputs`` params are primal, the rest cotangents;
    its first ``num_results`` results are the primal results, the rest the cotangents."""
    tangent = set(g.params[num_inputs:])     # depends on a cotangent
    primal = set(g.params[:num_inputs])      # depends on a primal input only
    fwd_ops, bwd_ops = [], []
    for o in g.ops:
        if any(v in tangent for v in o.operands):
            tangent.update(o.results)
            bwd_ops.append(o)
        elif any(v in primal for v in o.operands):
            primal.update(o.results)
            fwd_ops.append(o)
        else:                                # constants: in both, DCE keeps what is used
            fwd_ops.append(o)
            bwd_ops.append(o)
    primal_results, grads = g.results[:num_results], g.results[num_results:]
    fwd_ops, bwd_ops = _sink(fwd_ops, bwd_ops, primal_results)
    order = {id(o): i for i, o in enumerate(g.ops)}
    bwd_ops.sort(key=lambda o: order[id(o)])
    bwd = dce(Function(g.name + "_bwd", [], bwd_ops, grads))
    defined = {r for o in bwd.ops for r in o.results}
    used = [v for o in bwd.ops for v in o.operands] + list(grads)
    residuals = list(dict.fromkeys(v for v in used
                                   if v not in defined and v not in g.params[num_inputs:]))
    clones = {v: Value(v.type, None, f"res{i}") for i, v in enumerate(residuals)}
    bwd = _rebind(bwd, clones, g.params[num_inputs:])
    fwd = dce(Function(g.name + "_fwd", g.params[:num_inputs], fwd_ops,
                       primal_results + residuals))
    return Split(fwd, bwd, num_results)


def _sink(fwd_ops, bwd_ops, primal_results):
    """Move forward ops that only the backward pass uses, and whose inputs are no bigger than
    their outputs (``1 - y * y``, a transpose of a weight), into the backward pass: the
    residual is then their input, which usually is kept anyway, not a new array. Inputs that
    are constants (made in both passes) cost nothing. A ``reshape`` that both passes read is
    copied into the backward pass (it is free): the residual is then its input, as many bytes
    but often a value kept anyway (a parameter, a loop's x slice)."""
    in_fwd, in_bwd = set(map(id, fwd_ops)), set(map(id, bwd_ops))
    free = {r for o in fwd_ops if id(o) in in_bwd for r in o.results}
    users: dict = {}
    for o in fwd_ops + bwd_ops:
        for v in o.operands:
            users.setdefault(v, []).append(o)
    keep = set(primal_results)
    moved, copied = [], []
    for o in reversed(fwd_ops):
        if id(o) in in_bwd or not o.results:
            continue
        read = [u for r in o.results for u in users.get(r, [])]
        if any(r in keep for r in o.results) or any(id(u) in in_fwd for u in read):
            if o.opdef is ops.reshape and any(id(u) in in_bwd for u in read):
                in_bwd.add(id(o))
                copied.append(o)
            continue
        if sum(_bytes(v) for v in set(o.operands) if v not in free) <= sum(map(_bytes, o.results)):
            in_fwd.discard(id(o))
            in_bwd.add(id(o))
            moved.append(o)
    gone = set(map(id, moved))
    return [o for o in fwd_ops if id(o) not in gone], moved + copied + bwd_ops


def _bytes(v) -> int:
    return v.type.size * v.type.dtype.np.itemsize


def _rebind(fn: Function, clones: dict, cts: list) -> Function:
    """Copy fn with the residual values replaced by fresh parameters."""
    env = dict(clones)
    new_ops = []
    for o in fn.ops:
        n = Op(o.opdef, [env.get(v, v) for v in o.operands], o.attrs,
               [r.type for r in o.results], o.loc, o.regions)
        env.update(zip(o.results, n.results))
        new_ops.append(n)
    return Function(fn.name, list(clones.values()) + list(cts), new_ops,
                    [env.get(r, r) for r in fn.results])
