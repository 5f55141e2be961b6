"""The one place that says which IR passes run before code generation, and how a Function
becomes a Plan: every backend, ``lower``, benchmark and test builds its IR through here, so
that adding or reordering a pass changes them all at once."""
from __future__ import annotations

from ..codegen import Plan
from ..ir import Function
from ..ir.passes import Fusion, fuse, optimize

# The "mixed" stage of a tiered program: loop groups of at most this many elements run on
# NumPy while the large groups' kernels are compiled first. Used when it leaves at most
# MIXED_SHARE of the kernels to compile: the MLP step's 5 of 15 (its softmax and cross-entropy
# pieces are small), in use after 2.7-3.0 s instead of 4.9, and 10-20 % slower a step than
# with every kernel (plan.py) while the rest compile.
MIXED_GROUP_MAX = 2048
MIXED_SHARE = 0.6


def optimized_of(fn: Function) -> Function:
    """The Function after the passes that keep it one Function (what the NumPy tier runs)."""
    return optimize(fn)


def fusion_of(fn: Function, optimized: Function | None = None) -> Fusion:
    """The Function after every pass, grouped into kernels (``optimized``: ``optimized_of(fn)``
    if computed already)."""
    return fuse(optimize(fn) if optimized is None else optimized)


def plan_of(fn: Function, optimized: Function | None = None) -> Plan:
    """The plan of the compiled program of ``fn``: its kernels and its entry's source."""
    return Plan(fusion_of(fn, optimized))


def mixed_plan(plan: Plan) -> Plan | None:
    """The plan of the "mixed" stage (small groups on NumPy), when it saves enough of the
    compile of ``plan``; else None."""
    if plan.numpy_max >= MIXED_GROUP_MAX:
        return None
    mixed = Plan(plan.fusion, numpy_max=MIXED_GROUP_MAX)
    if 0 < len(set(mixed.kernel_sources)) <= MIXED_SHARE * len(set(plan.kernel_sources)):
        return mixed
    return None
