"""The small builder that derivative rules write IR with.

Rules work on Tracers of the trace being built, so ordinary arithmetic (``ct * (1 - out * out)``)
emits IR with NumPy's semantics (weak Python scalars keep the operand's dtype), and the exact IR
ops a rule needs (``reduce_sum`` over given axes, ``pad`` with interior padding, ...) are one
call of :func:`op`.
"""
from __future__ import annotations

import numpy as np

from ..ir import ops
from ..tracer.numpy.lifting import astype, convert, emit, lift, trace_of
from ..tracer.numpy.shapes import full
from ..tracer.trace_state import current_trace
from ..tracer.tracer import Tracer


def op(opdef, *operands, **attrs) -> Tracer:
    """One IR op on Tracers (single result)."""
    trace = trace_of(*operands) if operands else current_trace()
    return emit(trace, opdef, [lift(x, trace) for x in operands], **attrs)


def emit_op(trace, opdef, operands: list[Tracer], attrs: dict, regions=(), loc=None
            ) -> list[Tracer]:
    """Re-emit an op (any number of results, with its regions) on new operands."""
    new = trace.builder.emit(opdef, [x._value for x in operands], loc=loc,
                             regions=list(regions) or None, **attrs)
    return [Tracer(r, trace) for r in new.results]


def scalar(value, dtype) -> Tracer:
    """A 0-d constant of the given NumPy dtype."""
    return op(ops.constant, value=np.asarray(value, dtype))


def zeros(type) -> Tracer:
    return full(type.shape, np.zeros((), type.dtype.np), trace=current_trace())


def zeros_like(x: Tracer) -> Tracer:
    return zeros(x._value.type)


def mask(cond: Tracer, like: Tracer) -> Tracer:
    """A boolean condition as 0/1 in ``like``'s dtype."""
    return astype(cond, like.dtype)


def sum_axes(x: Tracer, axes) -> Tracer:
    axes = tuple(sorted(axes))
    return op(ops.reduce_sum, x, axes=axes) if axes else x


def expand(x: Tracer, shape, kept_dims) -> Tracer:
    """Broadcast a reduction's result back over the reduced axes."""
    return op(ops.broadcast_in_dim, x, shape=tuple(shape), dims=tuple(kept_dims))


def kept_dims(ndim: int, axes) -> list[int]:
    return [d for d in range(ndim) if d not in axes]


def add_any(a, b):
    """Sum of two cotangents where None stands for zero."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def swap_last(x: Tracer) -> Tracer:
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return op(ops.transpose, x, perm=perm)


def call_traced(fn, args: tuple, kwargs: dict, name: str):
    """Trace ``fn`` and emit one ``call`` op of it into the current trace.

    Returns (outputs as fn's pytree, the body Function, the output TreeDef)."""
    from ..tracer.pytree import flatten, unflatten
    from ..tracer.trace_function import trace
    leaves, _ = flatten((args, kwargs))
    traced = trace(fn, args, kwargs, name)
    outs = emit_call(traced.function, leaves + list(traced.captured))
    return unflatten(traced.out_tree, outs), traced.function, traced.out_tree


def emit_call(body, inputs: list, attrs: dict | None = None, loc=None) -> list[Tracer]:
    """One ``call`` op of ``body`` on ``inputs`` (Tracers or arrays) into their trace, each
    input converted to its parameter's dtype."""
    trace_ = trace_of(*inputs) if inputs else current_trace()
    operands = [lift(x, trace_) for x in inputs]
    operands = [x if x._value.type == p.type else convert(x, p.type.dtype)
                for x, p in zip(operands, body.params)]
    return emit_op(trace_, ops.call, operands, attrs or {}, [body], loc)
