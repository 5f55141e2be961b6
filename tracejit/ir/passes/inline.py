"""Inline ``call`` ops: replace each call by a copy of its body's ops (code generation and
fusion see one flat Function; autodiff has already used the call boundaries it needs).

Only calls of ``fn`` itself are inlined (and calls inside their bodies): a call inside a
control-flow region (cond, while_loop, scan) belongs to that region, which ``optimize`` treats
as a Function of its own. ``inlined`` is also how simplify replaces a ``cond`` whose index is
a constant by its branch.
"""
from __future__ import annotations

from ..graph import Function, Op, Value
from .. import ops


def inlined(body: Function, operands: list[Value]) -> tuple[list[Op], list[Value]]:
    """Fresh copies of ``body``'s ops reading ``operands`` where the body reads its params,
    and the values standing for the body's results (a result that is a param is its operand).
    Nested regions are shared, not copied: a Function is never changed in place."""
    inner = dict(zip(body.params, operands))
    new_ops = []
    for bop in body.ops:
        nop = Op(bop.opdef, [inner.get(v, v) for v in bop.operands], bop.attrs,
                 [r.type for r in bop.results], bop.loc, bop.regions)
        inner.update(zip(bop.results, nop.results))
        new_ops.append(nop)
    return new_ops, [inner.get(r, r) for r in body.results]


def inline_calls(fn: Function) -> Function:
    if not any(op.opdef is ops.call for op in fn.ops):
        return fn
    subst = {}
    new_ops = []

    def get(v):
        return subst.get(v, v)

    for op in fn.ops:
        if op.opdef is ops.call:
            body_ops, body_results = inlined(inline_calls(op.regions[0]),
                                             [get(v) for v in op.operands])
            new_ops.extend(body_ops)
            subst.update(zip(op.results, body_results))
        else:
            if any(v in subst for v in op.operands):
                nop = Op(op.opdef, [get(v) for v in op.operands], op.attrs,
                         [r.type for r in op.results], op.loc, op.regions)
                subst.update(zip(op.results, nop.results))
                op = nop
            new_ops.append(op)
    return Function(fn.name, fn.params, new_ops, [get(r) for r in fn.results])
