"""Structured control flow: ``cond``, ``while_loop`` and ``scan``, ops whose bodies are regions.

Each body is a nested Function. Values a body closes over are explicit operands (the tracer
captures them), so a region reads nothing but its parameters: every stage can treat a region
as a Function of its own (optimize it, plan it, differentiate it). ops.py re-exports them.

- ``cond(index, *operands)`` with regions ``branches``: runs ``branches[index]`` on the
  operands, the index clamped into range as in ``jax.lax.switch``. Every branch takes the
  operands' types and returns the same types. ``tracejit.cond`` and ``switch`` emit it.
- ``while_loop(*consts, *carries)`` with regions ``(cond_fn, body_fn)`` and attribute
  ``consts`` (how many operands are loop invariants): both regions take every operand;
  ``cond_fn`` returns a ``bool[]``, ``body_fn`` the new carries, of the carries' types.
  ``fori_loop`` with traced bounds emits it.
- ``scan(*consts, *carries, *xs)`` with region ``body`` and attributes ``consts``,
  ``carries``, ``length``, ``reverse``: ``body(consts, carries, x[i]) -> (carries, y)`` for
  each ``i`` of ``range(length)`` (backwards if ``reverse``); the results are the final
  carries and every ``y`` stacked along a new leading axis, at position ``i``. ``fori_loop``
  with static bounds emits a scan without ``xs`` (so reverse mode works through it).

The type rules name the position whose type differs, so the tracer's errors can say
``carry[1] changed from f32[8] to f64[8]``.
"""
from __future__ import annotations

import numpy as np

from .dtypes import as_dtype
from .registry import IRTypeError, OpDef, register
from .types import TensorType


def _types(ts) -> str:
    return "(" + ", ".join(str(t) for t in ts) + ")"


def _same(what: str, want: list, got: list, prefix: str):
    if len(want) != len(got):
        raise IRTypeError(f"{what}: {len(got)} values where {len(want)} were expected "
                          f"({_types(got)} vs {_types(want)})")
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            raise IRTypeError(f"{what}: {prefix}[{i}] changed from {w} to {g}")


# -- cond ------------------------------------------------------------------------------------

def _cond_rule(ts, attrs, regions):
    index, *operands = ts
    if index.shape != () or index.dtype.name != "int32":
        raise IRTypeError(f"cond's index must be i32[], got {index}")
    first = regions[0]
    for k, branch in enumerate(regions):
        _same(f"cond branch {k} parameters", operands, [p.type for p in branch.params],
              "operand")
        _same(f"cond branch {k} results", first.result_types, branch.result_types, "result")
    return list(first.result_types)


def _cond_impl(index, *operands, regions):
    from .interpreter import interpret
    k = int(np.clip(int(index), 0, len(regions) - 1))
    return list(interpret(regions[k], list(operands)))


cond = register(OpDef("cond", None, {}, _cond_rule, _cond_impl, "control", num_regions=None,
                      internal=True))


# -- while_loop ------------------------------------------------------------------------------

def _while_rule(ts, attrs, regions):
    cond_fn, body_fn = regions
    k = attrs["consts"]
    if not 0 <= k <= len(ts):
        raise IRTypeError(f"while_loop: {k} consts but {len(ts)} operands")
    for name, fn in (("cond_fn", cond_fn), ("body_fn", body_fn)):
        _same(f"while_loop {name} parameters", list(ts), [p.type for p in fn.params],
              "operand")
    if cond_fn.result_types != [TensorType(as_dtype("bool"), ())]:
        raise IRTypeError(f"while_loop cond_fn must return one bool[], got "
                          f"{_types(cond_fn.result_types)}")
    _same("while_loop body_fn", list(ts[k:]), body_fn.result_types, "carry")
    return list(ts[k:])


def _while_impl(*operands, regions, consts):
    from .interpreter import interpret
    cond_fn, body_fn = regions
    fixed, carries = list(operands[:consts]), list(operands[consts:])
    while bool(interpret(cond_fn, fixed + carries)[0]):
        carries = list(interpret(body_fn, fixed + carries))
    return carries


while_loop = register(OpDef("while_loop", None, {"consts": "int"}, _while_rule, _while_impl,
                            "control", num_regions=2, internal=True))


# -- scan ------------------------------------------------------------------------------------

def scan_parts(operands: list, consts: int, carries: int) -> tuple[list, list, list]:
    """A scan's operands (or their types) split into (consts, carries, xs)."""
    return (list(operands[:consts]), list(operands[consts:consts + carries]),
            list(operands[consts + carries:]))


def _scan_rule(ts, attrs, regions):
    (body,) = regions
    n, m, length = attrs["consts"], attrs["carries"], attrs["length"]
    if n < 0 or m < 0 or n + m > len(ts):
        raise IRTypeError(f"scan: {n} consts and {m} carries but {len(ts)} operands")
    if length < 0:
        raise IRTypeError(f"scan: negative length {length}")
    consts, carries, xs = scan_parts(ts, n, m)
    for i, x in enumerate(xs):
        if x.ndim == 0 or x.shape[0] != length:
            raise IRTypeError(f"scan: xs[{i}] is {x}, whose leading axis is not the length "
                              f"{length}")
    slices = [TensorType(x.dtype, x.shape[1:]) for x in xs]
    _same("scan body parameters", consts + carries + slices, [p.type for p in body.params],
          "operand")
    outs = body.result_types
    _same("scan body", carries, outs[:m], "carry")
    return carries + [TensorType(y.dtype, (length,) + tuple(y.shape)) for y in outs[m:]]


def _scan_impl(*operands, regions, consts, carries, length, reverse):
    from .interpreter import interpret
    (body,) = regions
    fixed, carry, xs = scan_parts(operands, consts, carries)
    ys = [np.empty((length,) + tuple(t.shape), t.dtype.np)
          for t in body.result_types[carries:]]
    for i in (reversed(range(length)) if reverse else range(length)):
        out = interpret(body, fixed + carry + [x[i] for x in xs])
        carry = list(out[:carries])
        for y, o in zip(ys, out[carries:]):
            y[i] = o
    return carry + ys


scan = register(OpDef("scan", None, {"consts": "int", "carries": "int", "length": "int",
                                     "reverse": "bool"}, _scan_rule, _scan_impl, "control",
                      num_regions=1, internal=True))
