"""``autocast``: mixed precision as an IR -> IR transform, composed as ``grad`` is.

``autocast(f)`` traces ``f`` into a Function, rewrites it by the policy (policy.py) and then
runs it exactly as grad's transformed Functions run (autodiff/api.py): inlined into the
enclosing trace under ``jit``, ``grad`` or another transform, or through ``jit`` on concrete
arrays. So ``jit(grad(autocast(loss)))``, ``grad(autocast(loss))``, ``autocast(grad(loss))``
and ``jit(autocast(step))`` with ``grad`` inside all give one Function holding ordinary
``convert`` ops, which ``jit(...).lower(...)`` shows and every pass and backend already knows.

Where the converts go (``autocast_function``):

- before a "lower" op (``matmul``): its float32 operands are converted to float16, and its
  result stays float16 (the backend accumulates in float32 and rounds once);
- before a "float32" op (exp, log, sums, div, ...): its float16 operands are converted up;
- before a "promote" op whose operands now differ: the narrower converted to the wider
  (NumPy's promotion), except that a scalar constant takes its partner's dtype, as a weakly
  typed Python scalar would;
- before a region op (call, cond, while_loop, scan): each operand back to the type the region
  expects, the regions being autocast on their own with their signatures kept;
- at the end: each result back to the dtype the function returned before autocast.

Nested autocasts, as torch's nested ``with autocast(...)`` blocks: an autocast traced inside
another (``autocast(f)`` where ``f`` calls ``autocast(g, dtype="bfloat16")`` or
``autocast(g, enabled=False)``) rewrites ``g`` by its own dtype and policy, or not at all, and
puts it in a ``call`` op marked ``autocast="bfloat16"`` (or ``"off"``), which the enclosing
rewrite leaves alone (its operands are converted back to the dtypes ``g`` was traced with).
Reverse and forward mode keep the mark on the derivative's region (autodiff/reverse.py), so the
backward ops of ``g`` stay in ``g``'s precision under ``autocast(grad(f))`` too. Outside any
autocast, ``autocast(g, enabled=False)`` is ``g``, and an autocast is inlined as before.

The functions among the arguments are traced as their values, and so are the Python and NumPy
scalars where Python code needs their values, as grad's arguments are
(``autocast(block)(x, n_layers)`` loops ``range(n_layers)``).

Parameters are never converted in place: a float32 weight stays a float32 parameter (the
master copy) and only its use by a "lower" op sees a float16 convert of it. With the results
keeping their dtypes, ``grad`` of an autocast loss gives float32 gradients for float32
parameters (the convert's derivative converts the cotangent back), an optimizer updates the
float32 masters, and callers need not know autocast was there. Under ``grad(autocast(f))``
the backward pass runs in the dtypes of the forward ops it differentiates (as torch's does);
under ``autocast(grad(f))`` the policy rewrites the backward ops too. Both are float16
matmuls with float32 sums and losses; they can differ in the last float16 bit.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from ..autodiff.api import (Transformed, _arg_names, _inside_trace, _name, write_state_back,
                            none_differentiated, run)
from ..autodiff.build import emit_call, trace_static_as_needed
from ..ir import Function, dtypes, ops, verify
from ..ir.passes.rewrite import Rewriter
from ..tracer.pytree import flatten, state_leaves, unflatten
from ..tracer.trace_function import trace
from .policy import DEFAULT_CATEGORY, resolve

# Op categories whose type rules want the float operands of one dtype (elementwise, pad,
# concatenate, scatter_add, matmul, solve): after autocast they may need converts to agree.
_SAME_DTYPE = frozenset({"elementwise", "movement", "scatter", "matmul", "linalg"})


def autocast(fn=None, dtype="float16", *, policy=None, enabled=True):
    """``fn`` with its ops run in mixed precision by ``policy`` (``tracejit.amp.POLICY``
    updated by the ``policy`` mapping, op name -> "lower" | "float32" | "promote").

    ``@autocast``, ``@autocast(dtype="float16")`` and ``autocast(f)`` all work; the result
    composes with ``jit`` and ``grad`` in any order. Results keep the dtypes ``fn`` returns
    without autocast. ``enabled=False`` gives ``fn`` itself (torch's switch)."""
    if isinstance(fn, str):              # autocast("float16") as a decorator factory
        fn, dtype = None, fn
    low = low_dtype(dtype)
    table = resolve(policy)

    def apply(f):
        return _autocast(f, low, table) if enabled else _disabled(f)

    return apply if fn is None else apply(fn)


def low_dtype(dtype) -> dtypes.DType:
    """The autocast dtype, checked: float16, or bfloat16 (with ml_dtypes installed)."""
    if isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16"):
        if dtypes.bfloat16 is None:
            raise ValueError(
                "tracejit.amp.autocast: bfloat16 needs the ml_dtypes package (NumPy's "
                "bfloat16 dtype, installed with JAX): pip install ml_dtypes; or use "
                "dtype='float16'")
        return dtypes.bfloat16
    try:
        low = dtypes.as_dtype(dtype)
    except TypeError as e:
        raise ValueError(f"tracejit.amp.autocast: dtype {dtype!r}: {e}") from None
    return _half(low)


def _half(low: dtypes.DType) -> dtypes.DType:
    if not (low.is_float and low.bits < 32):
        raise ValueError(f"tracejit.amp.autocast: dtype {low.name} is not a low precision; "
                         "use dtype='float16' or 'bfloat16'")
    return low


# How many autocast traces enclose the code being traced in this thread (module docstring).
_enclosing = threading.local()


def _inside_autocast() -> bool:
    return getattr(_enclosing, "depth", 0) > 0


def _trace_inside_autocast(fn, args, kwargs, names):
    _enclosing.depth = getattr(_enclosing, "depth", 0) + 1
    try:
        # A model's state (BatchNorm's running statistics, pytree.state_leaves) may be
        # written, as under grad: mixed-precision training of a model with BatchNorm was
        # refused ("writes into its argument ... under a transform"), also when the model
        # was read from a closure
        state = state_leaves((args, kwargs))
        return trace(fn, args, kwargs, _name(fn), names, writable=frozenset(state),
                     state_writes=True)
    finally:
        _enclosing.depth -= 1


def _autocast(fn, low, table):
    names = _arg_names(fn)

    def traced(*args, **kwargs):
        t, args, kwargs = trace_static_as_needed(
            lambda a, k: _trace_inside_autocast(fn, a, k, names), args, kwargs)
        leaves = flatten((args, kwargs))[0]
        cast = autocast_function(t.function, low, table)
        inputs = leaves + list(t.captured)
        if _inside_autocast() and _inside_trace(inputs):    # kept from the enclosing rewrite
            outs = emit_call(cast, inputs, {"autocast": low.name})
        else:
            outs = run(cast, inputs)
        # the new values of the model state it wrote: into the caller's arrays (or the
        # enclosing trace's), as grad writes them (autodiff/api.py)
        write_state_back(t, [leaves[j] for j in t.written], outs[t.n_results:])
        return unflatten(t.out_tree, outs[:t.n_results])

    return Transformed(fn, traced, f"autocast_{_name(fn)}", differentiated=none_differentiated)


def _disabled(fn):
    """``autocast(fn, enabled=False)``: ``fn`` itself, except inside an enclosing autocast's
    trace, where its ops are put in a region that the enclosing rewrite leaves alone."""
    names = _arg_names(fn)

    @functools.wraps(fn)
    def off(*args, **kwargs):
        if not _inside_autocast():
            return fn(*args, **kwargs)
        t, args, kwargs = trace_static_as_needed(
            lambda a, k: trace(fn, a, k, _name(fn), names), args, kwargs)
        inputs = flatten((args, kwargs))[0] + list(t.captured)
        return unflatten(t.out_tree, emit_call(t.function, inputs, {"autocast": "off"}))

    return off


def autocast_function(fn: Function, dtype=dtypes.float16, policy=None) -> Function:
    """``fn`` rewritten by ``policy`` (a full table, as ``policy.resolve()`` gives; None: the
    default): same parameters, same result types, converts inserted (module docstring).
    ``fn`` itself when nothing changes (no float ops at all, say)."""
    table = resolve() if policy is None else policy
    return verify(_Rewrite(fn, low_dtype(dtype), table).run())


class _Rewrite:
    """One Function's rewrite: the Rewriter's substitution map gives each original value its
    new one, whose dtype may now differ; converts are made once per (value, dtype)."""

    def __init__(self, fn: Function, low: dtypes.DType, table):
        self.fn, self.low, self.table = fn, low, table
        self.rw = Rewriter(fn)
        self.casts: dict = {}

    def run(self) -> Function:
        for op in self.fn.ops:
            self.visit(op)
        for r in self.fn.results:
            new = self.rw.get(r)
            if new.type.dtype != r.type.dtype:
                self.rw.replace(r, self.cast(new, r.type.dtype, None))
        return self.rw.finish()

    def visit(self, op) -> None:
        new = [self.rw.get(v) for v in op.operands]
        if op.regions:
            fixed = op.opdef is ops.call and op.attrs["autocast"]    # by a nested autocast
            regions = (op.regions if fixed else
                       [autocast_function(r, self.low, self.table) for r in op.regions])
            new = [self.cast(n, v.type.dtype, op.loc) for n, v in zip(new, op.operands)]
            return self.emit(op, new, regions)
        if op.opdef is ops.convert and new[0].type.dtype == op.attrs["dtype"]:
            return self.rw.replace(op.result, new[0])     # already that dtype now
        floats = [i for i, v in enumerate(op.operands) if v.type.dtype.is_float]
        category = self.table.get(op.name, DEFAULT_CATEGORY)
        if category == "lower" and all(op.operands[i].type.dtype.bits <= 32 for i in floats):
            new = [self.cast(n, self.low, op.loc) if i in floats else n
                   for i, n in enumerate(new)]
        elif category == "float32":
            new = [self.cast(n, dtypes.float32, op.loc)
                   if i in floats and n.type.dtype.bits < 32 else n for i, n in enumerate(new)]
        if op.opdef.category in _SAME_DTYPE:
            self.agree(op, new, floats)
        self.emit(op, new)

    def agree(self, op, new: list, floats: list[int]) -> None:
        """Operands that shared a dtype before autocast share one again: NumPy's promotion of
        their dtypes now, scalar constants following the others (as weak scalars do)."""
        groups: dict = {}
        for i in floats:
            groups.setdefault(op.operands[i].type.dtype, []).append(i)
        for idx in groups.values():
            if len({new[i].type.dtype for i in idx}) < 2:
                continue
            literal = {i: _literal(new[i]) for i in idx}
            strong = [i for i in idx if literal[i] is None] or idx
            target = _promote(new[i].type.dtype for i in strong)
            for i in idx:
                if literal[i] is not None and not _fits(literal[i], target):
                    target = _promote([target, new[i].type.dtype])
            for i in idx:
                new[i] = (self.cast_literal(new[i], target) if literal[i] is not None
                          else self.cast(new[i], target, op.loc))

    def emit(self, op, new: list, regions=None) -> None:
        same_regions = regions is None or all(a is b for a, b in zip(regions, op.regions))
        if same_regions and all(a is b for a, b in zip(new, op.operands)):
            self.rw.keep(op)
            return
        made = self.rw.new(op.opdef, new, op.attrs, op.loc,
                           list(regions) if regions is not None else (op.regions or None))
        for r, nr in zip(op.results, made.results):
            nr.name = r.name
            self.rw.replace(r, nr)

    def cast(self, v, dtype: dtypes.DType, loc):
        if v.type.dtype == dtype:
            return v
        key = (v, dtype)
        if key not in self.casts:
            self.casts[key] = self.rw.new(ops.convert, [v], {"dtype": dtype}, loc).result
        return self.casts[key]

    def cast_literal(self, v, dtype: dtypes.DType):
        """A scalar constant (through its broadcasts and reshapes) made again in ``dtype``:
        a new constant, not a convert of a full-size broadcast."""
        if v.type.dtype == dtype:
            return v
        key = (v, dtype)
        if key not in self.casts:
            op = v.op
            if op.opdef is ops.constant:
                value = np.asarray(op.attrs["value"]).astype(dtype.np)
                made = self.rw.new(ops.constant, [], {"value": value}, op.loc)
            else:
                inner = self.cast_literal(op.operands[0], dtype)
                made = self.rw.new(op.opdef, [inner], op.attrs, op.loc)
            self.casts[key] = made.result
        return self.casts[key]


def _literal(v):
    """The value of a scalar constant that ``v`` broadcasts or reshapes, else None."""
    while v.op is not None and v.op.opdef in (ops.broadcast_in_dim, ops.reshape):
        v = v.op.operands[0]
    if v.op is not None and v.op.opdef is ops.constant and v.type.size == 1:
        return np.asarray(v.op.attrs["value"])
    return None


def _fits(value: np.ndarray, dtype: dtypes.DType) -> bool:
    """Whether a finite constant stays finite in ``dtype`` (1e5 does not in float16)."""
    with np.errstate(all="ignore"):
        return bool(np.all(np.isfinite(value.astype(dtype.np)) | ~np.isfinite(value)))


def _promote(ds) -> dtypes.DType:
    return dtypes.as_dtype(np.result_type(*[d.np for d in ds]))
