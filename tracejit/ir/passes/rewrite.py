"""A small helper shared by the rewriting passes: rebuild a Function op by op with a
substitution map, so each pass states only its rule. Ops keep their regions (nested
Functions, never changed in place); ``keep(op, regions)`` gives an op new ones."""
from __future__ import annotations

from ..graph import Function, Op
from .inline import inlined


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

    def keep(self, op: Op, regions: list | None = None) -> Op:
        """Copies ``op`` forward (with ``regions`` in place of its own, if given: same
        params and result types, so its results keep their types)."""
        new_regions = regions is not None and any(a is not b for a, b in zip(regions, op.regions))
        if new_regions or any(v in self.subst for v in op.operands):
            self.changed |= new_regions
            new = Op(op.opdef, [self.get(v) for v in op.operands], op.attrs,
                     [r.type for r in op.results], op.loc,
                     list(regions) if new_regions else op.regions)
            for r, nr in zip(op.results, new.results):
                nr.name = r.name
                self.subst[r] = nr
            op = new
        self.ops.append(op)
        return op

    def new(self, opdef, operands, attrs, loc, regions=None) -> Op:
        attrs = opdef.normalize_attrs(attrs)
        types = opdef.infer([v.type for v in operands], attrs, regions or [])
        op = Op(opdef, operands, attrs, types, loc, regions)
        self.ops.append(op)
        self.changed = True
        return op

    def splice(self, body: Function, operands) -> list:
        """Appends a copy of ``body``'s ops on ``operands``; returns its results' values."""
        new_ops, results = inlined(body, operands)
        self.ops.extend(new_ops)
        self.changed = True
        return results

    def finish(self) -> Function:
        if not self.changed:
            return self.fn
        return Function(self.fn.name, self.fn.params, self.ops,
                        [self.get(r) for r in self.fn.results])


def map_regions(fn: Function, transform) -> Function:
    """``fn`` with ``transform(region)`` in place of each region of its ops (``fn`` itself if
    that changes none). ``transform`` must keep a region's params and result types."""
    if not any(op.regions for op in fn.ops):
        return fn
    rw = Rewriter(fn)
    for op in fn.ops:
        rw.keep(op, [transform(r) for r in op.regions] if op.regions else None)
    return rw.finish()
