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
from ..tracer.pytree import flatten, register_pytree_node, unflatten
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


class Concrete:
    """A leaf of a transform's arguments traced as its value, not as a parameter: a pytree node
    with no leaves whose structure holds the value, unflattened into the value itself."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


register_pytree_node(Concrete, lambda c: ((), c.value), lambda value, _: value)


def static_leaves(tree, scalars: str = "all"):
    """``tree`` with the leaves that are neither Tracers nor arrays held as their values
    (``Concrete``): what cannot be traced at all (a function, an activation passed to a
    block) and the Python and NumPy scalars, all (``scalars="all"``), the integer and bool ones
    (``"ints"``) or none (``"none"``).

    For the bodies traced anew at each call (``checkpoint``, ``custom_vjp``, ``autocast``): a
    value fixed for the call, as JAX's ``static_argnums`` and ``nondiff_argnums`` make it, so
    that ``range(n)`` or ``act(x)`` on such an argument works (traced, it failed there, with a
    hint to mark it static in a jit, whose static arguments the body traced again)."""
    leaves, td = flatten(tree)
    marks = [is_static(x, scalars) for x in leaves]
    if not any(marks):
        return tree
    return unflatten(td, [Concrete(x) if m else x for x, m in zip(leaves, marks)])


def is_static(leaf, scalars: str = "all") -> bool:
    """Whether ``static_leaves`` holds ``leaf`` as its value."""
    if isinstance(leaf, (Tracer, np.ndarray)):
        return False
    number = isinstance(leaf, (bool, int, float, complex, np.generic))
    if not number or scalars == "all":
        return True
    return scalars == "ints" and not (isinstance(leaf, (float, complex))
                                      or (isinstance(leaf, np.generic)
                                          and leaf.dtype.kind not in "biu"))


def trace_static_as_needed(trace_fn, args: tuple, kwargs: dict):
    """``trace_fn(args, kwargs)`` with the arguments that cannot be traced held as their values
    (static_leaves), and where Python code needed the value of a number among them (a
    ConcretizationError: ``range(n)``), again with the integer and bool ones, then all numbers
    held so, as grad's arguments are made static (api.py, Transformed). The numbers stay
    parameters where they can, so that a transform that rewrites the body (autocast, which
    treats a constant as a weak scalar) sees it as it did. Returns (result, args, kwargs)."""
    from ..tracer.errors import ConcretizationError
    error, tried = None, []
    for scalars in ("none", "ints", "all"):
        a, k = static_leaves((args, kwargs), scalars)
        key = flatten((a, k))[1]
        if key in tried:
            continue
        tried.append(key)
        try:
            return trace_fn(a, k), a, k
        except ConcretizationError as e:
            error = e
    raise error


def call_traced(fn, args: tuple, kwargs: dict, name: str):
    """Trace ``fn`` and emit one ``call`` op of it into the current trace.

    Returns (outputs as fn's pytree, the body Function, the output TreeDef)."""
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
