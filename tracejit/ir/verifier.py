"""The verifier: every use is defined before it, and every op's types match its rule.

Regions (the bodies of call, cond, while_loop, scan) are verified as Functions of their own,
and they close over nothing: a body that reads a value of an enclosing Function instead of a
parameter is an error that says so (the tracer passes captured values as operands). Errors in
a region name the path to it, e.g. ``@main op 3 (scan) / @body op 1 (add)``.

Each stage's output is verified in tests, so a broken pass is caught where it breaks.
"""
from __future__ import annotations

from .graph import Function
from .registry import IRTypeError


class VerificationError(Exception):
    pass


def verify(fn: Function) -> Function:
    _verify(fn, frozenset(), "")
    return fn


def _verify(fn: Function, enclosing: frozenset, path: str):
    def undefined(what: str, v) -> VerificationError:
        if v in enclosing:
            return VerificationError(
                f"{what} {v} belongs to an enclosing function: a region closes over nothing; "
                "pass the value as an operand of the op holding the region and read its "
                "parameter")
        return VerificationError(f"{what} {v} is used before it is defined")

    defined = set()
    for p in fn.params:
        if p in defined:
            raise VerificationError(f"{path}@{fn.name}: parameter {p} listed twice")
        defined.add(p)
    for i, op in enumerate(fn.ops):
        where = f"{path}@{fn.name} op {i} ({op.name}{', ' + op.loc if op.loc else ''})"
        for v in op.operands:
            if v not in defined:
                raise undefined(f"{where}: operand", v)
        try:
            expected = op.opdef.infer([v.type for v in op.operands],
                                      op.opdef.normalize_attrs(op.attrs), op.regions)
        except (IRTypeError, ValueError, TypeError) as e:  # also unconvertible attributes
            raise VerificationError(f"{where}: {e}") from None
        got = [r.type for r in op.results]
        if expected != got:
            raise VerificationError(f"{where}: results typed {got}, rule says {expected}")
        for r in op.results:
            if r in defined:
                raise VerificationError(f"{where}: value {r} defined twice (not SSA)")
            if r.op is not op:
                raise VerificationError(f"{where}: result {r} does not point back to its op")
            defined.add(r)
        if op.regions:
            outer = enclosing | defined
            for region in op.regions:
                _verify(region, outer, f"{path}@{fn.name} op {i} ({op.name}) / ")
    for r in fn.results:
        if r not in defined:
            if r in enclosing:
                raise undefined(f"{path}@{fn.name}: result", r)
            raise VerificationError(f"{path}@{fn.name}: result {r} is never defined")
    return fn
