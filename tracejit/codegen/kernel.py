"""One fusion group -> the Python source of one Numba kernel: explicit loops, one scalar
temporary per intermediate value, no intermediate arrays.

Kernels are shape-generic: every size and every integer of the index arithmetic is a kernel
parameter (``s0, s1, ...``), and every scalar constant too (``c0, ...``), so the source depends
only on the group's structure, dtypes and ranks. A new batch size reuses the compiled kernel.

Parameters, in order: input arrays ``a*``, output arrays ``o*``, scalars ``c*``, sizes ``s*``,
then ``lo, hi``: the block of the split dim this call computes. A kernel is one ``nogil``
function, compiled once; the plan runs it on the whole range or, for large work, on blocks in
several threads at once (``threads.py``). A loop group ``for``s over the outer space (F
without the reduced axes A; the first loop over ``range(lo, hi)``), then, per outer index, one
pass over A per level of reductions (a reduction that needs another's result comes a pass
later), then a last pass writing full-size outputs. Float sums add with an fadd marked reassociable and max/min go
through llvm.maximum/minimum, so LLVM vectorizes reductions without fast-math on the kernel.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


from ..ir import ops
from ..ir.passes.fusion import REDUCTIONS, FusionGroup, same_index
from ..ir.passes.fusion import index_map as fusion_index_map
from . import emitters
from .emitters import lit, np_name
from .mathlib import has_vector_minmax
from .templates import TEMPLATES

VECTOR_MINMAX = has_vector_minmax()
COSTLY = {"exp", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan", "sinh",
          "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arctanh", "erf", "power", "arctan2"}
SUM_BLOCK = 1024      # elements of a float32 sum added in float32 before a float64 add
MATMUL_WORK = 64      # multiply-adds of a matmul that count as one element of loop work
MATMUL_ROWS = 16      # fewest rows (or columns) of a matmul's output per thread
FASTMATH = '{"contract"}'
_TOKEN = re.compile(r"[A-Za-z_]\w*")

HEADER = """import math
import numpy as np
from numba import njit
from tracejit.codegen.mathlib import exp32, tanh32, logistic32, fmaximum, fminimum, radd
from tracejit.codegen.mathlib import reciprocal_parts, divide_by_parts
from tracejit.codegen.runtime import ifloordiv, iremainder, ipow, f2i32, f2i64
from tracejit.codegen.blas import gemm
"""


@dataclass
class KernelSpec:
    """A kernel's source and how to call it: which values and sizes go in, in order."""
    source: str
    inputs: list            # Values passed as arrays a*
    outputs: list           # Values written o*
    scalars: list           # scalar constant Values passed by value c*
    sizes: list             # ints passed as s*
    parallel: bool          # large enough, and splittable, to run in blocks on threads
    work: int = 0           # elements in the iteration space (for the parallel threshold)
    span: int = 0           # the size of the dim that ``lo, hi`` index: one call is 0, span
    min_block: int = 1      # fewest elements of that dim per thread
    notes: list = field(default_factory=list)


def is_scalar_constant(v) -> bool:
    return v.op is not None and v.op.opdef is ops.constant and v.shape == ()


def _init(kind: str, dtype) -> str:
    big = {"float32": "np.inf", "float64": "np.inf", "int32": "2147483647",
           "int64": "9223372036854775807", "bool": "True"}[dtype.name]
    if kind in ("reduce_sum",):
        return "0.0" if dtype.is_float else "0"
    if kind == "reduce_prod":
        return lit(dtype, 1) if dtype.is_float else "1"
    if kind in ("reduce_max", "argmax"):
        if dtype.is_bool:
            return "False"
        if dtype.is_int:
            return f"{np_name(dtype)}(-{big} - 1)"
        return f"{np_name(dtype)}(-np.inf)"
    if dtype.is_bool:
        return "True"
    return f"{np_name(dtype)}({big})"


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


class _Block:
    def __init__(self, inner: bool):
        self.lines: list[str] = []
        self.memo: dict = {}
        self.inner = inner


class LoopKernel:
    """Source generation for a ``loop`` or ``matmul`` group."""

    def __init__(self, group: FusionGroup, par_min: int):
        self.g = group
        F, A = group.space, group.axes
        self.var = [f"r{d}" if d in A else f"i{d}" for d in range(len(F))]
        self.full = tuple(self.var)
        self.outer_idx = tuple(self.var[d] for d in range(len(F)) if d not in A)
        self.defined = {r: op for op in group.ops for r in op.results}
        self.inputs, self.scalars, self.sizes = [], [], []
        self._size_keys: dict = {}
        self._names: dict = {}
        self.inner_names: set = set()
        self.acc: dict = {}          # reduction op -> name of its result
        self.n = 0
        self.work = 1
        for n in F:
            self.work *= n
        if group.head is not None:
            # A matmul's parallel variant splits the BLAS call into row or column blocks across
            # Numba's threads (BLAS itself runs single-threaded: runtime.single_threaded_blas).
            a, b = group.head.operands
            self.work = max(self.work, a.shape[-2] * a.shape[-1] * b.shape[-1] // MATMUL_WORK)
        self.par_min = par_min
        outer = [d for d in range(len(F)) if d not in A]
        # the dim ``lo:hi`` index: the first outer one (matmul groups: see parallel_gemm)
        self.span = F[outer[0]] if outer and group.head is None else 0
        self.splittable = self.span > 0
        self.min_block = 1

    # -- names ---------------------------------------------------------------------------
    def tmp(self, prefix="t") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def size(self, key, n: int) -> str:
        if key not in self._size_keys:
            self._size_keys[key] = f"s{len(self.sizes)}"
            self.sizes.append(int(n))
        return self._size_keys[key]

    def array(self, v) -> str:
        if v not in self._names:
            self._names[v] = f"a{len(self.inputs)}"
            self.inputs.append(v)
        return self._names[v]

    def scalar(self, v) -> str:
        if v not in self._names:
            self._names[v] = f"c{len(self.scalars)}"
            self.scalars.append(v)
        return self._names[v]

    def is_inner(self, *exprs) -> bool:
        return any(t in self.inner_names or (t[0] == "r" and t[1:].isdigit())
                   for e in exprs for t in _TOKEN.findall(e))

    def put(self, expr: str, inner: bool, prefix="t") -> str:
        block = self.block if inner else self.outer
        name = self.tmp(prefix)
        block.lines.append(f"{name} = {expr}")
        if inner:
            self.inner_names.add(name)
        return name

    # -- values at an index --------------------------------------------------------------
    def value(self, v, idx: tuple) -> str:
        key = (v, idx)
        for block in (self.block, self.outer):
            if key in block.memo:
                return block.memo[key]
        name = self._value(v, idx)
        (self.block if name in self.inner_names else self.outer).memo[key] = name
        return name

    def _value(self, v, idx: tuple) -> str:
        op = self.defined.get(v)
        if op is None:
            if is_scalar_constant(v):
                return self.scalar(v)
            if not idx:
                # A 0-d input: read once before the loops (Numba's parfor cannot type x[()]).
                name = self.tmp()
                self.prologue.append(f"{name} = {self.array(v)}[()]")
                return name
            sub = ", ".join(idx) if idx else "()"
            if len(idx) == 1:
                sub += ","
            return self.put(f"{self.array(v)}[{sub}]", self.is_inner(*idx))
        if op.opdef in REDUCTIONS:
            assert same_index(idx, self.outer_idx, self.g.outer), (op, idx)
            return self.acc[op]
        if op is self.g.head:
            assert same_index(idx, self.full, self.g.space), (op, idx)
            return self.put(f"mm[{', '.join(idx) or '()'}{',' if len(idx) == 1 else ''}]",
                            self.is_inner(*idx))
        if (op.opdef is ops.reshape and idx and op.operands[0] not in self.defined
                and not is_scalar_constant(op.operands[0])):
            # A reshape of a materialized (C-contiguous) array is a view: index the view
            # directly instead of re-deriving each coordinate with integer division.
            sub = ", ".join(idx) + ("," if len(idx) == 1 else "")
            return self.put(f"{self.reshaped_view(op)}[{sub}]", self.is_inner(*idx))
        if op.opdef.category == "layout":
            return self.value(op.operands[0], self.index_map(op, idx))
        if op.opdef is ops.iota:
            return self.put(emitters.iota_expr(op, idx), self.is_inner(*idx))
        kind, rule = emitters.RULES[op.opdef]
        assert kind == "scalar", op
        args = [self.value(o, idx) for o in op.operands]
        if (op.opdef is ops.div and op.result.dtype.name == "float32"
                and self.is_inner(args[0]) and not self.is_inner(args[1])):
            return self.put(self.divide_by_invariant(*args), True)
        return self.put(rule(op, *args), self.is_inner(*args))

    def divide_by_invariant(self, a: str, b: str) -> str:
        """``a / b`` where ``b`` stays the same along the inner loop (a row's sum or norm):
        ``b``'s reciprocal parts once per row, a scale and a multiply per element
        (mathlib.divide_by_parts says why and how exact)."""
        key = ("reciprocal", b)
        if key not in self.outer.memo:
            parts = self.tmp("rp")
            self.outer.lines.append(f"{parts}m, {parts}e = reciprocal_parts({b})")
            self.outer.memo[key] = parts
        parts = self.outer.memo[key]
        return f"divide_by_parts({a}, {b}, {parts}m, {parts}e)"

    def reshaped_view(self, op) -> str:
        key = ("view", op.operands[0], op.attrs["shape"])
        if key not in self._names:
            dims = ", ".join(self.size((id(op), "o", k), n)
                             for k, n in enumerate(op.attrs["shape"]))
            name = f"v{len(self.prologue)}"
            self.prologue.append(f"{name} = {self.array(op.operands[0])}.reshape(({dims},))")
            self._names[key] = name
        return self._names[key]

    def index_map(self, op, idx: tuple) -> tuple:
        x = op.operands[0]
        a = op.attrs
        mapped = fusion_index_map(op, idx)
        if "?" not in mapped:
            # A permutation or selection of the index (broadcast, transpose, a reshape that
            # only adds or drops size-1 dims, a trivial slice): the fusion pass's symbolic
            # rule is the code. What it cannot say ("?") needs arithmetic, below.
            return mapped
        if op.opdef is ops.slice:
            # starts and steps are size parameters too, so that structurally equal kernels
            # (the im2col slices of a convolution) share compiled code
            out = []
            for d, (i, s, st) in enumerate(zip(idx, a["starts"], a["steps"])):
                if s == 0 and st == 1:
                    out.append(i)
                    continue
                start = self.size((id(op), "start", d), s)
                out.append(f"({start} + {self.size((id(op), 'step', d), st)} * {i})"
                           if st != 1 else f"({start} + {i})")
            return tuple(out)
        if op.opdef is ops.rev:
            return tuple(f"({self.size((id(op), d), x.shape[d])} - 1 - {i})"
                         if d in a["dims"] else i for d, i in enumerate(idx))
        assert op.opdef is ops.reshape, op
        shape = a["shape"]
        inner = self.is_inner(*idx)
        lin = idx[0] if idx else "0"
        for k in range(1, len(idx)):
            lin = f"({lin} * {self.size((id(op), 'o', k), shape[k])} + {idx[k]})"
        lin = self.put(lin, inner, "x")
        out, stride = [], 1
        for k in reversed(range(x.type.ndim)):
            s = self.size((id(op), "st", k), stride)
            d = self.size((id(op), "d", k), x.shape[k])
            out.append(self.put(f"({lin} // {s}) % {d}", inner, "x"))
            stride *= x.shape[k]
        return tuple(reversed(out))

    # -- loop structure ------------------------------------------------------------------
    def levels(self) -> list[list]:
        reds = [op for op in self.g.ops if op.opdef in REDUCTIONS]
        level: dict = {}

        def depth(v, seen) -> int:
            op = self.defined.get(v)
            if op is None or op in seen:
                return 0
            seen.add(op)
            if op.opdef in REDUCTIONS:
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
            init = "0.0" if kind == "reduce_sum" and x.dtype.is_float else _init(kind, x.dtype)
            acc = self.tmp("acc")
            info.append((op, kind, x, acc, init))
            out.append(f"{acc} = {init}")
            if kind in ("argmax", "argmin"):
                out.append(f"{acc}_i = np.int64(0)")
        # a list, not a set: the source must not depend on string hashing (the disk cache is
        # keyed by it, and each process hashes strings differently)
        blocked = [acc for op, kind, x, acc, init in info
                   if kind == "reduce_sum" and x.dtype.name == "float32"]
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
                self.acc[op] = self.put(f"{np_name(res)}({acc})", False, "red")

    # -- reductions over leading axes -------------------------------------------------------
    def column_reduction(self, levels, stored) -> bool:
        """Whether this group reduces over leading axes only, keeping the trailing ones, with
        nothing full-size to write (a bias gradient: ``d.sum(axis=0)`` and its update). The
        usual order, kept axes outside, would walk each column with a stride: column_body
        turns the loops around."""
        g = self.g
        kept = [d for d in range(len(g.space)) if d not in g.axes]
        return (g.head is None and len(levels) == 1 and bool(g.axes) and bool(kept)
                and max(g.axes) < min(kept)
                and all(op.opdef.name in ("reduce_sum", "reduce_max", "reduce_min")
                        for op in levels[0])
                and not any(v.shape == g.space for v in stored))

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
        self.block = self.outer = _Block(True)      # everything below depends on the indices
        names = []
        for op in reds:
            x, kind = op.operands[0], op.opdef.name
            acc = self.tmp("acc")
            if kind == "reduce_sum" and x.dtype.is_float:
                lines.append(f"{acc} = np.zeros(({kept_dims},), np.float64)")
            elif kind == "reduce_sum":
                lines.append(f"{acc} = np.zeros(({kept_dims},), {np_name(op.result.dtype)})")
            else:
                lines.append(f"{acc} = np.full(({kept_dims},), {_init(kind, x.dtype)}, "
                             f"{np_name(x.dtype)})")
            v = self.value(x, self.full)
            self.block.lines.append(f"{acc}[{sub}] = {_combine(kind, x.dtype, f'{acc}[{sub}]', v)}")
            names.append(acc)
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
        self.block = self.outer = _Block(False)
        for op, acc in zip(reds, names):
            self.acc[op] = self.put(f"{np_name(op.result.dtype)}({acc}[{sub}])", False, "red")
        stores = [self.store(v, self.outer_idx, onames[v]) for v in stored]
        pad = ""
        for k, d in enumerate(kept):
            bounds = "lo, hi" if k == 0 else self.size(("F", d), g.space[d])
            lines.append(f"{pad}for i{d} in range({bounds}):")
            pad += "    "
        return lines + [pad + b for b in self.outer.lines + stores]

    def reduction_body(self, info, blocked: list) -> list[str]:
        """One element's update of each accumulator (``blocked`` ones: their float32 block
        sums ``acc_b``), in a fresh inner block."""
        self.block = _Block(True)
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
                self.block.lines.append(f"{acc} = {_combine(kind, x.dtype, acc, v)}")
        return self.block.lines

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
            if w in out or not any(self.defined[u].opdef.name in COSTLY for u in tree):
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
            self.block.lines.append(f"{self.scratch[x]}[{sub}] = {v}")

    def store(self, v, idx, o):
        name = self.value(v, idx)
        sub = ", ".join(idx) if idx else "()"
        if len(idx) == 1:
            sub += ","
        return f"{o}[{sub}] = {name}"

    def generate(self) -> KernelSpec:
        g = self.g
        outs = list(g.outputs)
        onames = {v: f"o{i}" for i, v in enumerate(outs)}
        self.outer = _Block(False)
        self.block = self.outer
        self.prologue: list[str] = []
        mm_out = g.head.result if g.head is not None else None
        stored = [v for v in outs if v is not mm_out]
        levels = self.levels()
        if self.column_reduction(levels, stored):
            body = self.column_body(levels[0], stored, onames)
            params = ([self._names[v] for v in self.inputs] + [onames[v] for v in outs]
                      + [self._names[v] for v in self.scalars]
                      + [f"s{i}" for i in range(len(self.sizes))])
            return self.spec(params, self.prologue + body, outs)
        self.scratch = self.scratch_outputs(levels, [v for v in stored if v.shape == g.space],
                                            onames) if g.axes else {}
        for reds in levels:
            self.reduction_pass(reds)
        if g.axes:
            full_outs = [v for v in stored if v.shape == g.space]
            if full_outs:
                self.block = _Block(True)
                for w, o in self.scratch.items():
                    self.block.memo[(w, self.full)] = self.put(
                        f"{o}[{', '.join(self.full)}{',' if len(self.full) == 1 else ''}]", True)
                stores = [self.store(v, self.full, onames[v]) for v in full_outs]
                self.outer.lines.extend(self.inner_loops(self.block.lines + stores, ""))
            self.block = self.outer
            self.outer.lines.extend(self.store(v, self.outer_idx, onames[v])
                                    for v in stored if v not in full_outs)
        else:
            stores = [self.store(v, self.full, onames[v]) for v in stored]
            self.outer.lines.extend(stores)
        body = self.outer.lines if stored else []
        pad = ""
        loops = []
        for k, d in enumerate(d for d in range(len(g.space)) if d not in g.axes):
            # a matmul group splits its product instead (parallel_gemm)
            bounds = ("lo, hi" if k == 0 and g.head is None
                      else self.size(("F", d), g.space[d]))
            loops.append(f"{pad}for i{d} in range({bounds}):")
            pad += "    "
        epilogue = None
        if (g.head is not None and body and not g.axes and len(g.space) == 2
                and g.head.result.dtype.is_float
                and set(re.findall(r"\bmm\[[^\]]*\]", "\n".join(body))) <= {"mm[i0, i1]"}):
            # The epilogue reads the product only at its own element: each block runs it on
            # the block it multiplied (parallel_gemm).
            epilogue = body
        body = loops + [pad + b for b in body] if body and not epilogue else []
        pre = self.matmul_prelude(onames, epilogue) if g.head is not None else []
        if g.head is not None and body:
            self.splittable = False     # loops after the product read all of it: one call
        # Inputs are named lazily while the body is generated; the prelude may add some.
        params = ([self._names[v] for v in self.inputs] + [onames[v] for v in outs]
                  + [self._names[v] for v in self.scalars]
                  + [f"s{i}" for i in range(len(self.sizes))])
        # 0-d loads first: a merged epilogue runs inside each block of the product
        return self.spec(params, self.prologue + pre + body, outs)

    def spec(self, params, body, outs) -> KernelSpec:
        parallel = self.splittable and self.span >= 2 and self.work >= self.par_min
        return KernelSpec(function_source(params, body), list(self.inputs), outs,
                          list(self.scalars), self.sizes, parallel, self.work, self.span,
                          self.min_block)

    def operand(self, v) -> str:
        """A matmul operand: an input array, or a view of one (its group's operand ops)."""
        op = self.defined.get(v)
        if op is None:
            return self.array(v)
        base = self.operand(op.operands[0])
        if op.opdef is ops.transpose:
            return f"{base}.T"
        dims = ", ".join(self.size((id(op), "o", k), n) for k, n in enumerate(op.attrs["shape"]))
        return f"{base}.reshape(({dims},))"

    def parallel_gemm(self, m: str, n: str, by_rows: bool, epilogue) -> list[str]:
        """The GEMM of a 2-D float matmul group on the block ``lo:hi`` of its rows (of its
        columns when the product is wider than tall, ``by_rows`` False; blas.gemm takes such
        views without copies) and, when ``epilogue`` (the elementwise loop body over ``i0,
        i1``) is given, the epilogue on that block at once, while it is in cache. One call with
        the whole range computes everything. The direction is fixed when the plan is built, so
        the kernel compiles one GEMM call and one epilogue loop, not two of each."""
        if by_rows:
            rows, cols, call = "range(lo, hi)", f"range({n})", "gemm(A[lo:hi], B, mm[lo:hi])"
        else:
            rows, cols, call = f"range({m})", "range(lo, hi)", "gemm(A, B[:, lo:hi], mm[:, lo:hi])"
        lines = [call]
        if epilogue:
            lines += [f"for i0 in {rows}:", f"    for i1 in {cols}:"]
            lines += [f"        {e}" for e in epilogue]
        return lines

    def matmul_prelude(self, onames, epilogue=None) -> list[str]:
        head = self.g.head
        a, b = (self.operand(v) for v in head.operands)
        mv = head.result
        target = next((onames[v] for v in self.g.outputs
                       if v.dtype == mv.dtype and v.shape == mv.shape), None)
        rank = mv.type.ndim
        dims = ", ".join(self.size(("F", d), mv.shape[d]) for d in range(rank))
        lines = [f"mm = {target}" if target else f"mm = np.empty(({dims},), {np_name(mv.dtype)})"]
        kdim = self.size(("K",), head.operands[0].shape[-1])
        m, n = (self.size(("F", rank - 2), mv.shape[-2]), self.size(("F", rank - 1), mv.shape[-1]))
        if rank == 2:
            # A and B may be F-contiguous (transposed views): BLAS reads them with its
            # transpose flags, no copy.
            lines += [f"A = {a}", f"B = {b}"]
            if mv.dtype.is_float:
                by_rows = mv.shape[-2] >= mv.shape[-1]
                self.span = mv.shape[-2] if by_rows else mv.shape[-1]
                self.splittable, self.min_block = True, MATMUL_ROWS
                return lines + self.parallel_gemm(m, n, by_rows, epilogue)
            return lines + [f"for i in range({m}):",
                            f"    for j in range({n}):",
                            "        mm[i, j] = 0",
                            f"    for kk in range({kdim}):",
                            "        x = A[i, kk]",
                            f"        for j in range({n}):",
                            "            mm[i, j] += x * B[kk, j]"]
        batch = "1"
        for d in range(rank - 2):
            batch = f"{batch} * {self.size(('F', d), mv.shape[d])}"
        lines += [f"A = np.ascontiguousarray({a}).reshape(({batch}, {m}, {kdim}))",
                  f"B = np.ascontiguousarray({b}).reshape(({batch}, {kdim}, {n}))",
                  f"M = mm.reshape(({batch}, {m}, {n}))"]
        if mv.dtype.is_float:
            lines += [f"for q in range({batch}):", "    gemm(A[q], B[q], M[q])"]
        else:
            lines += [f"for q in range({batch}):",
                      f"    for i in range({m}):",
                      f"        for j in range({n}):",
                      "            M[q, i, j] = 0",
                      f"        for kk in range({kdim}):",
                      "            x = A[q, i, kk]",
                      f"            for j in range({n}):",
                      "                M[q, i, j] += x * B[q, kk, j]"]
        return lines


def function_source(params: list[str], body: list[str]) -> str:
    """The kernel module: one ``nogil`` function over the block ``lo:hi`` (threads run blocks
    of one call at once)."""
    sig = ", ".join(params + ["lo", "hi"])
    flags = f'cache=True, nogil=True, error_model="numpy", fastmath={FASTMATH}'
    lines = [HEADER, f"\n@njit({flags})\ndef kernel({sig}):"]
    lines += ["    " + b for b in body or ["pass"]]
    lines.append("    return 0")
    return "\n".join(lines) + "\n"


def generate_kernel(group: FusionGroup, par_min: int) -> KernelSpec:
    if group.kind in ("loop", "matmul"):
        return LoopKernel(group, par_min).generate()
    (op,) = group.ops
    return TEMPLATES[op.opdef](op, group)
