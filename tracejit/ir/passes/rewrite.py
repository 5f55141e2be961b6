"""A small helper shared by the rewriting passes: rebuild a Function op by op with a
substitution map, so each pass states only its rule."""
from __future__ import annotations

from ..graph import Function, Op


class Rewriter:
    """Copies ops forward, renaming operands through ``subst``; ``replace(v, w)`` redirects."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.subst = {}
        self.ops: list[Op] = []
        self.changed = False

    def get(self, v):
        return self.subst.get(v, v)

    def replace(self, old, new):
        self.subst[old] = new
        self.changed = True

    def keep(self, op: Op) -> Op:
        if any(v in self.subst for v in op.operands):
            new = Op(op.opdef, [self.get(v) for v in op.operands], op.attrs,
                     [r.type for r in op.results], op.loc, op.regions)
            for r, nr in zip(op.results, new.results):
                nr.name = r.name
                self.subst[r] = nr
            op = new
        self.ops.append(op)
        return op

    def new(self, opdef, operands, attrs, loc) -> Op:
        attrs = opdef.normalize_attrs(attrs)
        types = opdef.infer([v.type for v in operands], attrs)
        op = Op(opdef, operands, attrs, types, loc)
        self.ops.append(op)
        self.changed = True
        return op

    def finish(self) -> Function:
        if not self.changed:
            return self.fn
        return Function(self.fn.name, self.fn.params, self.ops,
                        [self.get(r) for r in self.fn.results])
