"""The one place that says which IR passes run before code generation, and how a Function
becomes a Plan: every backend, ``lower``, benchmark and test builds its IR through here, so
that adding or reordering a pass changes them all at once.

Each step takes an optional ``PassLog`` (ir/passes/pass_log.py) and records into it: the
optimizer's passes, ``fuse`` (groups by kind) and the plan's ``arena`` (bytes planned, peak
live bytes). ``dump_log()`` is the log that ``TRACEJIT_DUMP=passes`` prints."""
from __future__ import annotations

from collections import Counter

from ..codegen import Plan
from ..config import config
from ..ir import Function
from ..ir.passes import Fusion, PassLog, fuse, optimize
from ..ir.passes.liveness import liveness, nbytes
from ..ir.passes.remat import policy_of, remat as remat_pass

# The "mixed" stage of a tiered program: loop groups of at most this many elements run on
# NumPy while the large groups' kernels are compiled first. Used when it leaves at most
# MIXED_SHARE of the kernels to compile: the MLP step's 5 of 15 (its softmax and cross-entropy
# pieces are small), in use after 2.7-3.0 s instead of 4.9, and 10-20 % slower a step than
# with every kernel (plan.py) while the rest compile.
MIXED_GROUP_MAX = 2048
MIXED_SHARE = 0.6


def dump_log() -> PassLog | None:
    """A log printing each pass as it runs, if ``TRACEJIT_DUMP`` names ``passes`` (with the
    IR after each: ``passes+ir``); else None, and nothing is recorded."""
    if "passes+ir" in config.dump:
        return PassLog(echo=True, ir=True)
    if "passes" in config.dump:
        return PassLog(echo=True)
    return None


def optimized_of(fn: Function, log: PassLog | None = None, remat=None) -> Function:
    """The Function after the passes that keep it one Function (what the NumPy tier runs).
    ``remat`` ("auto" or a policy, see ir/passes/remat.py): rematerialization runs last, after
    the optimizer's fixpoint, so that no CSE merges its copies back into their originals."""
    out = optimize(fn, log=log)
    policy = policy_of(remat)
    if policy is not None:
        stats: dict = {}
        before, out = out, remat_pass(out, policy, stats=stats)
        if log is not None:
            log.add("remat", f"@{fn.name}", len(before.ops), len(out.ops), stats,
                    result=out, changed=out is not before)
    return out


def fusion_of(fn: Function, optimized: Function | None = None,
              log: PassLog | None = None, remat=None) -> Fusion:
    """The Function after every pass, grouped into kernels (``optimized``: ``optimized_of(fn)``
    if computed already)."""
    optimized = optimized_of(fn, log, remat) if optimized is None else optimized
    fusion = fuse(optimized)
    if log is not None:
        kinds = Counter(g.kind for g in fusion.groups)
        log.add("fuse", f"@{fn.name}", len(optimized.ops), len(fusion.function.ops),
                {"groups": len(fusion.groups), "kinds": dict(kinds),
                 "broadcast_copies": len(fusion.function.ops) - len(optimized.ops)},
                result=fusion)
    return fusion


def plan_of(fn: Function, optimized: Function | None = None,
            log: PassLog | None = None, remat=None) -> Plan:
    """The plan of the compiled program of ``fn``: its kernels and its entry's source."""
    plan = Plan(fusion_of(fn, optimized, log, remat))
    if log is not None:
        n = len(plan.fn.ops)
        log.add("arena", f"@{fn.name}", n, n,
                {"arena_bytes": plan.arena_bytes or 0, "buffers": len(plan.scratch),
                 "unpacked_bytes": sum(nbytes(v) for v, *_ in plan.scratch),
                 "peak_bytes": liveness(plan.fn).peak_bytes, "kernels": len(plan.kernels)},
                changed=False)
    return plan


def mixed_plan(plan: Plan) -> Plan | None:
    """The plan of the "mixed" stage (small groups on NumPy), when it saves enough of the
    compile of ``plan``; else None."""
    if plan.numpy_max >= MIXED_GROUP_MAX:
        return None
    mixed = Plan(plan.fusion, numpy_max=MIXED_GROUP_MAX)
    if 0 < len(set(mixed.kernel_sources)) <= MIXED_SHARE * len(set(plan.kernel_sources)):
        return mixed
    return None
