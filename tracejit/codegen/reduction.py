"""Reduction passes of a loop kernel: accumulators, the float32 block sums, leading-axis
reductions turned around, and values kept between the last pass and the output pass. A mixin
of kernel.LoopKernel, which provides values at an index (``value``), names and sizes.

Accumulators hold the compute type (representation.py): a float16 sum adds float32 block sums
like a float32 one, its total in float64 rounded to float16 once at the end (NumPy's float16
sums also accumulate in float32); float16 max, min and prod accumulate in float32."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

from ..ir import ops
from ..ir.passes.fusion import is_reduction
from . import emitters
from .representation import compute_dtype, lit, rounded, rounded_from64, scalar_type
from .representation import store
from .mathlib import has_vector_minmax

VECTOR_MINMAX = has_vector_minmax()
SUM_BLOCK = 1024      # elements of a float32 sum added in float32 before a float64 add


def _init(kind: str, dtype) -> str:
    if kind in ("reduce_sum",):
        return "0.0" if dtype.is_float else "0"
    if kind == "reduce_prod":
        return lit(dtype, 1) if dtype.is_float else "1"
    if kind in ("reduce_max", "argmax"):
        if dtype.is_bool:
            return "False"
        if dtype.is_unsigned:
            return lit(dtype, 0)
        if dtype.is_int:
            return f"{scalar_type(dtype)}(-{np.iinfo(dtype.np).max} - 1)"
        return f"{scalar_type(dtype)}(-np.inf)"
    if dtype.is_bool:
        return "True"
    if dtype.is_int:
        return f"{scalar_type(dtype)}({np.iinfo(dtype.np).max})"
    return f"{scalar_type(dtype)}(np.inf)"


def _combine(kind: str, dtype, acc: str, v: str) -> str:
    """An expression for the new accumulator value (NaN-propagating for max/min). A float sum
    adds with ``radd``, an fadd that LLVM may reassociate, so the loop vectorizes into partial
    sums (a sum written as plain ``+`` stays one sequential chain)."""
    if kind == "reduce_sum" and dtype.is_float:
        return f"radd({acc}, np.float64({v}))"
    if kind == "reduce_sum":
        return f"{acc} + {v}"
    if kind == "reduce_prod":
        return f"{acc} * {v}"
    cmp = ">" if kind == "reduce_max" else "<"
    if dtype.is_float and VECTOR_MINMAX:
        return f"{'fmaximum' if kind == 'reduce_max' else 'fminimum'}({acc}, {v})"
    if dtype.is_bool:
        return f"{acc} | {v}" if kind == "reduce_max" else f"{acc} & {v}"
    # ``|`` rather than ``or``: no short-circuit branch, so the loop vectorizes (selects).
    nan = f" | ({v} != {v})" if dtype.is_float else ""
    return f"{v} if (({v} {cmp} {acc}){nan}) else {acc}"


@dataclass(frozen=True)
class Accumulator:
    """A reduction's ``reduce`` rule: its accumulator's initial value ``init(dtype)`` and the
    new value ``combine(dtype, acc, v)`` (argmax/argmin also keep the index: reduction_body)."""
    init: Callable
    combine: Callable


for _opdef in (ops.reduce_sum, ops.reduce_prod, ops.reduce_max, ops.reduce_min, ops.argmax,
               ops.argmin):
    emitters.register("reduce", _opdef)(Accumulator(partial(_init, _opdef.name),
                                                    partial(_combine, _opdef.name)))


def _result(op, acc: str) -> str:
    """A reduction's result from its accumulator ``acc``: float sums accumulate in float64 and
    round once to the result dtype; the others hold the compute type already."""
    res = op.result.dtype
    if op.opdef is ops.reduce_sum and op.operands[0].dtype.is_float:
        return rounded_from64(res, acc)
    return rounded(res, f"{scalar_type(res)}({acc})")


def accumulator(op) -> Accumulator:
    kind, rule = emitters.RULES[op.opdef]
    assert kind == "reduce", op
    return rule


class Reductions:
    def levels(self) -> list[list]:
        reds = [op for op in self.g.ops if is_reduction(op)]
        level: dict = {}

        def depth(v, seen) -> int:
            op = self.defined.get(v)
            if op is None or op in seen:
                return 0
            seen.add(op)
            if is_reduction(op):
                return level_of(op) + 1
            return max((depth(o, seen) for o in op.operands), default=0)

        def level_of(op) -> int:
            if op not in level:
                level[op] = depth(op.operands[0], set())
            return level[op]

        out: list[list] = []
        for op in reds:
            lv = level_of(op)
            while len(out) <= lv:
                out.append([])
            out[lv].append(op)
        return out

    def inner_loops(self, body: list[str], indent: str) -> list[str]:
        lines, pad = [], indent
        for d in self.g.axes:
            lines.append(f"{pad}for r{d} in range({self.size(('F', d), self.g.space[d])}):")
            pad += "    "
        return lines + [pad + b for b in body]

    def reduction_pass(self, reds: list):
        out = self.outer.lines
        info = []
        for op in reds:
            x = op.operands[0]
            kind = op.opdef.name
            # float sums accumulate in float64 (closer to NumPy's pairwise sum than float32)
            init = ("0.0" if kind == "reduce_sum" and x.dtype.is_float
                    else accumulator(op).init(x.dtype))
            acc = self.tmp("acc")
            info.append((op, kind, x, acc, init))
            out.append(f"{acc} = {init}")
            if kind in ("argmax", "argmin"):
                out.append(f"{acc}_i = np.int64(0)")
        # a list, not a set: the source must not depend on string hashing (the disk cache is
        # keyed by it, and each process hashes strings differently)
        blocked = [acc for op, kind, x, acc, init in info
                   if kind == "reduce_sum" and compute_dtype(x.dtype).name == "float32"]
        if len(self.g.axes) != 1 or not blocked:
            out.extend(self.inner_loops(self.reduction_body(info, blocked=[]), ""))
        else:
            # float32 sums add float32 partial sums over blocks of SUM_BLOCK elements (LLVM
            # keeps 64 of them) and the blocks' totals in float64: about NumPy's pairwise
            # accuracy, and a third faster than converting every element to float64. The
            # partial block comes first: a loop from 0 vectorizes, one from an offset did not.
            (d,) = self.g.axes
            n = self.size(("F", d), self.g.space[d])
            nb, rem = self.tmp("nb"), self.tmp("rem")
            # both bodies first: generating them hoists loop-invariant values into ``out``
            first = self.reduction_body(info, blocked)
            blocks = self.reduction_body(info, blocked)
            out += [f"{nb} = {n} // {SUM_BLOCK}", f"{rem} = {n} - {nb} * {SUM_BLOCK}"]
            out += [f"{acc}_b = np.float32(0.0)" for acc in blocked]
            out.append(f"for r{d} in range({rem}):")
            out += ["    " + b for b in first]
            out += [f"{acc} = np.float64({acc}_b)" for acc in blocked]
            out.append(f"for rb in range({nb}):")
            out += [f"    {acc}_b = np.float32(0.0)" for acc in blocked]
            out += [f"    for k in range({SUM_BLOCK}):",
                    f"        r{d} = {rem} + rb * {SUM_BLOCK} + k"]
            out += ["        " + b for b in blocks]
            out += [f"    {acc} = {acc} + np.float64({acc}_b)" for acc in blocked]
        for op, kind, x, acc, init in info:
            res = op.result.dtype
            if kind in ("argmax", "argmin"):
                self.acc[op] = f"{acc}_i"
            elif res.is_bool:
                self.acc[op] = acc
            else:
                self.acc[op] = self.put(_result(op, acc), False, "red")

    # -- reductions over leading axes -------------------------------------------------------
    def column_reduction(self, levels, stored) -> bool:
        """Whether this group reduces over leading axes only, keeping the trailing ones, with
        nothing full-size to write but values the accumulating loop can store as it passes
        (a bias gradient: ``d.sum(axis=0)`` and its update; ``d`` itself, written out for
        another kernel). The usual order, kept axes outside, would walk each column with a
        stride (and sum float32 in float32 blocks): column_body turns the loops around."""
        g = self.g
        kept = [d for d in range(len(g.space)) if d not in g.axes]
        return (g.head is None and len(levels) == 1 and bool(g.axes) and bool(kept)
                and max(g.axes) < min(kept)
                and all(op.opdef.name in ("reduce_sum", "reduce_max", "reduce_min")
                        for op in levels[0])
                and not any(v.shape == g.space and self.reads_reduction(v) for v in stored))

    def column_body(self, reds, stored, onames) -> list[str]:
        """Accumulate into arrays over the kept axes, reduced axes outside and kept axes
        inside (contiguous, vectorized); then the epilogue per kept element. The parallel
        variant gives each thread a block of the first kept axis."""
        g = self.g
        kept = [d for d in range(len(g.space)) if d not in g.axes]
        first = self.size(("F", kept[0]), g.space[kept[0]])
        kept_dims = ", ".join(self.size(("F", d), g.space[d]) for d in kept)
        sub = ", ".join(f"i{d}" for d in kept) + ("," if len(kept) == 1 else "")
        lines = []
        self.block = self.outer = self.new_block(True)      # everything below depends on the indices
        names = []
        for op in reds:
            x, kind = op.operands[0], op.opdef.name
            acc = self.tmp("acc")
            if kind == "reduce_sum" and x.dtype.is_float:
                lines.append(f"{acc} = np.zeros(({kept_dims},), np.float64)")
            elif kind == "reduce_sum":
                lines.append(f"{acc} = np.zeros(({kept_dims},), {scalar_type(op.result.dtype)})")
            else:
                # (not np.full: Numba does not type it with a dtype argument)
                lines.append(f"{acc} = np.empty(({kept_dims},), {scalar_type(x.dtype)})")
                lines.append(f"{acc}[:] = {accumulator(op).init(x.dtype)}")
            v = self.value(x, self.full)
            new = accumulator(op).combine(x.dtype, f"{acc}[{sub}]", v)
            self.block.lines.append(f"{acc}[{sub}] = {new}")
            names.append(acc)
        # full-size outputs (no reduction's result in them: column_reduction) are stored by
        # the accumulating loop, which visits every element once
        full = [v for v in stored if v.shape == g.space]
        self.block.lines.extend(self.store(v, self.full, onames[v]) for v in full)
        del first       # the block lo:hi of the first kept axis is the kernel's
        pad = ""
        for d in g.axes:
            lines.append(f"{pad}for r{d} in range({self.size(('F', d), g.space[d])}):")
            pad += "    "
        for k, d in enumerate(kept):
            bounds = "lo, hi" if k == 0 else self.size(("F", d), g.space[d])
            lines.append(f"{pad}for i{d} in range({bounds}):")
            pad += "    "
        lines += [pad + b for b in self.block.lines]
        self.block = self.outer = self.new_block(False)
        for op, acc in zip(reds, names):
            self.acc[op] = self.put(_result(op, f"{acc}[{sub}]"), False, "red")
        stores = [self.store(v, self.outer_idx, onames[v]) for v in stored if v not in full]
        pad = ""
        for k, d in enumerate(kept):
            bounds = "lo, hi" if k == 0 else self.size(("F", d), g.space[d])
            lines.append(f"{pad}for i{d} in range({bounds}):")
            pad += "    "
        return lines + [pad + b for b in self.outer.lines + stores]

    def reduction_body(self, info, blocked: list) -> list[str]:
        """One element's update of each accumulator (``blocked`` ones: their float32 block
        sums ``acc_b``), in a fresh inner block."""
        self.block = self.new_block(True)
        for op, kind, x, acc, init in info:
            v = self.value(x, self.full)
            self.keep_scratch(x, v)
            if kind in ("argmax", "argmin"):
                cmp = ">" if kind == "argmax" else "<"
                better = f"({v} {cmp} {acc})"
                if x.dtype.is_float:
                    better = f"({better} or ({v} != {v} and {acc} == {acc}))"
                c = self.put(better, True, "b")
                (axis,) = self.g.axes
                self.block.lines.append(f"{acc}_i = np.int64(r{axis}) if {c} else {acc}_i")
                self.block.lines.append(f"{acc} = {v} if {c} else {acc}")
            elif acc in blocked:
                self.block.lines.append(f"{acc}_b = radd({acc}_b, {v})")
            else:
                self.block.lines.append(f"{acc} = {accumulator(op).combine(x.dtype, acc, v)}")
        for v, o in self.passing_stores:
            self.block.lines.append(self.store(v, self.full, o))
        return self.block.lines

    def reads_reduction(self, v) -> bool:
        """Whether computing ``v`` in this group needs a reduction's result."""
        seen, stack = set(), [v]
        while stack:
            u = stack.pop()
            op = self.defined.get(u)
            if u in seen or op is None:
                continue
            if is_reduction(op):
                return True
            seen.add(u)
            stack.extend(op.operands)
        return False

    def scratch_outputs(self, levels, full_outs, onames) -> dict:
        """Values worth keeping between the last reduction pass and the output pass (softmax's
        exp(x - max)): operands of that pass's reductions that contain a transcendental op and
        that a full-size output uses at the same index. The pass stores each into the output
        buffer of the same dtype, and the output pass reads it back instead of recomputing it.
        Returns value -> output name."""
        if not levels or not full_outs:
            return {}

        def elementwise_tree(v):
            seen, stack = set(), [v]
            while stack:
                u = stack.pop()
                op = self.defined.get(u)
                if u in seen or op is None or op.opdef.category != "elementwise":
                    continue
                seen.add(u)
                stack.extend(op.operands)
            return seen

        out, used = {}, set()
        for red in levels[-1]:
            w = red.operands[0]
            tree = elementwise_tree(w)
            if w in out or not any(self.defined[u].opdef.costly for u in tree):
                continue
            for v in full_outs:
                if v is not w and v not in used and v.dtype == w.dtype and w in elementwise_tree(v):
                    out[w] = onames[v]
                    used.add(v)
                    break
        return out

    def keep_scratch(self, x, v):
        """In a reduction pass: store ``x`` (computed as ``v``) into its scratch output."""
        if x in self.scratch:
            sub = ", ".join(self.full) + ("," if len(self.full) == 1 else "")
            self.block.lines.append(f"{self.scratch[x]}[{sub}] = {store(x.dtype, v)}")

