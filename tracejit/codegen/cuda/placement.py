"""Which fusion groups run on the device, and why the others run on the CPU.

The simplest partition of the issue: a group runs on the device when every op in it has a
CUDA rule (kernels.py: loop groups, reductions, matmul groups); anything else (pad,
concatenate, gathers, sort, LAPACK, control flow, debug_print, ops with no device scalar
rule) runs on the CPU on NumPy, its operands copied back once and its results copied over
once when a device kernel needs them (program.py). ``reason`` is the visible note.
"""
from __future__ import annotations

from ...ir import ops
from ...ir.passes.fusion import FusionGroup
from .. import emitters
from .scalars import device_rule_missing

DEVICE_REDUCTIONS = {ops.reduce_sum, ops.reduce_prod, ops.reduce_max, ops.reduce_min,
                     ops.argmax, ops.argmin}
DEVICE_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64"}


def cpu_reason(g: FusionGroup) -> str | None:
    """None when ``g`` runs on the device, else why it runs on the CPU."""
    if g.kind not in ("loop", "matmul"):
        names = ", ".join(dict.fromkeys(op.opdef.name for op in g.ops))
        return f"{names}: no CUDA kernel for {g.kind} groups yet"
    for op in g.ops:
        for v in list(op.operands) + list(op.results):
            if v.dtype.name not in DEVICE_DTYPES:
                return f"{op.opdef.name}: dtype {v.dtype.name} has no CUDA kernels yet"
        missing = device_rule_missing(op)
        if missing is not None:
            return f"{op.opdef.name}: {missing}"
        kind = emitters.kind_of(op.opdef)
        if op.opdef.category == "reduction" and op.opdef not in DEVICE_REDUCTIONS:
            return f"{op.opdef.name}: no CUDA reduction rule"
        if op is not g.head and op.opdef.category != "reduction" and kind not in (
                "scalar", "index"):
            return f"{op.opdef.name}: no CUDA rule ({kind})"
    return None
