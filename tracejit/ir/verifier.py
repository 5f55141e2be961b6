"""The verifier: every use is defined before it, and every op's types match its rule.

Each stage's output is verified in tests, so a broken pass is caught where it breaks.
"""
from __future__ import annotations

from .graph import Function
from .registry import IRTypeError


class VerificationError(Exception):
    pass


def verify(fn: Function) -> Function:
    defined = set()
    for p in fn.params:
        if p in defined:
            raise VerificationError(f"parameter {p} listed twice")
        defined.add(p)
    for i, op in enumerate(fn.ops):
        where = f"@{fn.name} op {i} ({op.name}{', ' + op.loc if op.loc else ''})"
        for v in op.operands:
            if v not in defined:
                raise VerificationError(f"{where}: operand {v} is used before it is defined")
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
        for region in op.regions:
            verify(region)
    for r in fn.results:
        if r not in defined:
            raise VerificationError(f"@{fn.name}: result {r} is never defined")
    return fn
