"""``excess_precision``: float16 and bfloat16 elementwise chains computed in float32, rounded
once where a value leaves the chain, as an IR -> IR transform composed as ``autocast`` is.

tracejit's float16 semantics are NumPy's: every op rounds its result to float16. The compilers
of JAX and PyTorch do not: XLA keeps low-precision intermediates in float32
(``xla_allow_excess_precision``, on by default) and so does torch.compile's Inductor
(``emulate_precision_casts``, off by default). The results are as accurate or more, but not
NumPy's bit for bit, so tracejit makes it a choice: ``jit(excess_precision(f))``. The rounding
per op is what makes a float16 chain of arithmetic slower than the same chain in float32 on a
CPU without float16 arithmetic (two conversions an op, benchmarks/half_precision.py); without
it a fused kernel converts on load and on store only and moves half float32's bytes.

The rewrite (``excess_precision_function``): an elementwise op whose float operands are all
of one low-precision dtype runs in float32 on their float32 values, and the elementwise ops
after it read its float32 value, unrounded (so does a ``convert`` of it to a wider float). A
value that leaves its chain is rounded, once, for all its uses: one returned, read by a
non-elementwise op (a matmul, a sum, a reshape) or by a region op (a loop's carry). Rounding
it for every use, not only the leaving one, keeps the float16 value the only copy a fused
program stores (a softmax's exponentials, read by its sum and its division, would otherwise
be kept in float32 too: twice the bytes). The user's own converts to float16 (``astype``)
stay roundings. Parameters and results keep their types; regions (cond, while_loop, scan
bodies) are rewritten on their own, their signatures kept. ``lower(...)`` shows the
converts; the interpreter and every backend run them as usual.
"""
from __future__ import annotations

import numpy as np

from ..autodiff.api import Transformed, _arg_names, _name, none_differentiated, run
from ..autodiff.build import trace_static_as_needed
from ..ir import Function, dtypes, ops, verify
from ..ir.passes.rewrite import Rewriter
from ..tracer.pytree import flatten, unflatten
from ..tracer.trace_function import trace


def excess_precision(fn=None, *, enabled=True):
    """``fn`` with its float16/bfloat16 elementwise chains computed in float32, rounded once
    where each value leaves its chain (module docstring). ``@excess_precision`` and
    ``excess_precision(f)`` both work; composes with ``jit``, ``grad`` and ``autocast`` in
    any order. ``enabled=False`` gives ``fn`` itself."""
    def apply(f):
        return _transformed(f) if enabled else f

    return apply if fn is None else apply(fn)


def _transformed(fn):
    names = _arg_names(fn)

    def traced(*args, **kwargs):
        # functions, and numbers Python code needs, traced as their values (autocast.py)
        t, args, kwargs = trace_static_as_needed(
            lambda a, k: trace(fn, a, k, _name(fn), names), args, kwargs)
        leaves = flatten((args, kwargs))[0]
        wide = excess_precision_function(t.function)
        return unflatten(t.out_tree, run(wide, leaves + list(t.captured)))

    return Transformed(fn, traced, f"excess_precision_{_name(fn)}",
                       differentiated=none_differentiated)


def excess_precision_function(fn: Function) -> Function:
    """``fn`` with its low-precision elementwise ops computed in float32: same parameters and
    result types (``fn`` itself when it has none)."""
    return verify(_widen(fn))


def _is_low(dt) -> bool:
    return dt.is_float and dt.bits < 32


def _widen(fn: Function) -> Function:
    rw = Rewriter(fn)
    wide: dict = {}        # a low-precision value (rewritten side) -> its float32 value
    leaving = _leaving(fn)

    def up(v, loc):
        if v not in wide:
            wide[v] = _float32_literal(rw, v) or rw.new(
                ops.convert, [v], {"dtype": dtypes.float32}, loc).result
        return wide[v]

    for op in fn.ops:
        new = [rw.get(v) for v in op.operands]
        if op.regions:
            rw.keep(op, [_widen(r) for r in op.regions])
            continue
        if _widening(op) and new[0] in wide:
            # a chain's value made wider: from its float32 value, not from its rounding
            w = wide[new[0]]
            rw.replace(op.result, w if op.attrs["dtype"] == dtypes.float32 else rw.new(
                ops.convert, [w], op.attrs, op.loc).result)
            continue
        low = _chain_dtype(op)
        if low is None:
            rw.keep(op)
            continue
        made = rw.new(op.opdef, [up(n, op.loc) if _is_low(n.type.dtype) else n for n in new],
                      op.attrs, op.loc).result
        if op.result.type.dtype == low:
            rounded = rw.new(ops.convert, [made], {"dtype": low}, op.loc).result
            if op.result not in leaving:
                wide[rounded] = made
            made = rounded
        made.name = op.result.name
        rw.replace(op.result, made)
    return rw.finish()


def _leaving(fn: Function) -> set:
    """The values of ``fn`` that leave their chain: returned, or read by an op that is not
    an elementwise op of the chain nor a widening convert."""
    out = set(fn.results)
    for op in fn.ops:
        if op.regions or (_chain_dtype(op) is None and not _widening(op)):
            out.update(op.operands)
    return out


def _widening(op) -> bool:
    return op.opdef is ops.convert and op.attrs["dtype"].is_float \
        and not _is_low(op.attrs["dtype"])


def _float32_literal(rw: Rewriter, v):
    """A broadcast scalar constant (``0.5 * x``) made again in float32, holding the same
    low-precision value: a constant, where a convert of the broadcast would be one an element."""
    op = v.op
    if op is None or op.opdef is not ops.broadcast_in_dim or op.operands[0].op is None \
            or op.operands[0].op.opdef is not ops.constant:
        return None
    const = op.operands[0].op
    value = np.asarray(const.attrs["value"]).astype(np.float32)
    c = rw.new(ops.constant, [], {"value": value}, const.loc).result
    return rw.new(ops.broadcast_in_dim, [c], op.attrs, op.loc).result


def _chain_dtype(op):
    """The low-precision dtype ``op`` computes in, if it is an elementwise op that can run in
    float32 instead: float operands all of that dtype, its result of that dtype or bool."""
    if op.opdef.category != "elementwise" or op.opdef is ops.convert or not op.operands:
        return None
    floats = {v.type.dtype for v in op.operands if v.type.dtype.is_float}
    if len(floats) != 1:
        return None
    (low,) = floats
    result = op.result.type.dtype
    if not _is_low(low) or not (result == low or result.is_bool):
        return None
    return low
