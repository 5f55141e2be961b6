"""Common subexpression elimination: an op equal to an earlier one (same op, operands and
attributes) reuses its results. Side effects, barriers and region-holding ops are never merged.

``same_computation`` asks the same question of two values while tracing: the tracer uses it to
tell that two boolean masks written out twice (``x[x > 0] = x[x > 0] ** 2``) are equal."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..graph import Function, Op, Value
from .rewrite import Rewriter


def _attr_key(v):
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes())
    return v


def _mergeable(op: Op) -> bool:
    return not (op.opdef.side_effect or op.regions or op.opdef is ops.optimization_barrier)


def _op_key(op: Op, operands: tuple) -> tuple:
    """Equal keys, equal results: the op, its operands and its attributes (constants by
    value)."""
    return (op.opdef.name, operands,
            tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items())))


def cse(fn: Function) -> Function:
    rw = Rewriter(fn)
    seen = {}
    for op in fn.ops:
        operands = tuple(rw.get(v) for v in op.operands)
        if not _mergeable(op):
            rw.keep(op)
            continue
        key = _op_key(op, operands)
        prior = seen.get(key)
        if prior is not None:
            for r, pr in zip(op.results, prior.results):
                rw.replace(r, pr)
            continue
        seen[key] = rw.keep(op)
    return rw.finish()


def same_computation(a: Value, b: Value, depth: int = 8) -> bool:
    """Whether ``a`` and ``b`` hold the same value because CSE would merge them: the same value,
    or results of equal ops (op, attributes, result position) of operands that are the same
    computation, looking at most ``depth`` ops back. False means "not shown equal"."""
    if a is b:
        return True
    oa, ob = a.op, b.op
    if depth <= 0 or oa is None or ob is None or a.type != b.type:
        return False
    if not (_mergeable(oa) and _mergeable(ob)) or len(oa.operands) != len(ob.operands):
        return False
    if oa.results.index(a) != ob.results.index(b) or _op_key(oa, ()) != _op_key(ob, ()):
        return False
    return all(same_computation(x, y, depth - 1) for x, y in zip(oa.operands, ob.operands))
