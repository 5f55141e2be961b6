"""Inline ``call`` ops: replace each call by a copy of its body's ops (code generation and
fusion see one flat Function; autodiff has already used the call boundaries it needs)."""
from __future__ import annotations

from ..graph import Function, Op
from .. import ops


def inline_calls(fn: Function) -> Function:
    if not any(op.opdef is ops.call for op in fn.ops):
        return fn
    subst = {}
    new_ops = []

    def get(v):
        return subst.get(v, v)

    for op in fn.ops:
        if op.opdef is ops.call:
            body = inline_calls(op.regions[0])
            inner = dict(zip(body.params, (get(v) for v in op.operands)))
            for bop in body.ops:
                nop = Op(bop.opdef, [inner.get(v, v) for v in bop.operands], bop.attrs,
                         [r.type for r in bop.results], bop.loc, bop.regions)
                inner.update(zip(bop.results, nop.results))
                new_ops.append(nop)
            for r, br in zip(op.results, body.results):
                subst[r] = inner.get(br, br)
        else:
            if any(v in subst for v in op.operands):
                nop = Op(op.opdef, [get(v) for v in op.operands], op.attrs,
                         [r.type for r in op.results], op.loc, op.regions)
                subst.update(zip(op.results, nop.results))
                op = nop
            new_ops.append(op)
    return Function(fn.name, fn.params, new_ops, [get(r) for r in fn.results])
