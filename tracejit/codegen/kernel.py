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

import contextlib
import re
import sys

from ..ir import ops
from ..ir.passes.fusion import FusionGroup, is_reduction, same_index
from . import emitters, linalg_kernels, templates  # these two register the "kernel" rules
from .representation import held, load, rounded, store
from .matmul import MATMUL_WORK, MatmulKernel
from .reduction import Reductions
from .source import HEADER, KernelNames, KernelSpec, function_source

_TOKEN = re.compile(r"[A-Za-z_]\w*")



def half_accurate(group: FusionGroup) -> set:
    """The float32 values ``group`` computes only to round them to a 16-bit float: each of
    their uses in the group is a convert to float16 or bfloat16, or an elementwise op whose
    float32 result is such a value, and none leaves the group. A float16 chain under
    ``amp.excess_precision`` is made of them; their tanh needs float16's accuracy only
    (emitters.HALF_ACCURATE), as for an op whose result is float16 itself."""
    users: dict = {}
    for op in group.ops:
        for v in op.operands:
            users.setdefault(v, []).append(op)
    half: set = set()
    leaving = set(group.outputs)
    for op in reversed(group.ops):
        if op.opdef.category != "elementwise" or len(op.results) != 1:
            continue
        r = op.results[0]
        if r.dtype.name != "float32" or r in leaving or r not in users:
            continue
        if all(u.opdef.category == "elementwise" and len(u.results) == 1
               and (u.results[0] in half or (u.opdef is ops.convert
                                             and held(u.results[0].dtype) is not None
                                             and u.results[0].dtype.is_float))
               for u in users[r]):
            half.add(r)
    return half


def is_scalar_constant(v) -> bool:
    return v.op is not None and v.op.opdef is ops.constant and v.shape == ()


# Names an expression may use and still be computed once before the loops: the kernel
# module's globals (functions, np, math), Python's keywords, inputs (``a3``: read-only in the
# kernel), scalar arguments (``c0``) and sizes (``s2``). Attributes (``np.float32``) are
# dropped before the check; anything else (loop indices, temporaries of the loops, outputs,
# ``mm``) keeps an expression in its loop.
_INVARIANT_GLOBALS = frozenset(_TOKEN.findall(HEADER)) | {
    "if", "else", "and", "or", "not", "True", "False", "None"}
_PARAM = re.compile(r"[acs]\d+")
_ATTRIBUTE = re.compile(r"\.\s*[A-Za-z_]\w*")


class _Block:
    def __init__(self, inner: bool):
        self.lines: list[str] = []
        self.memo: dict = {}
        self.inner = inner


class LoopKernel(KernelNames, Reductions, MatmulKernel):
    """Source generation for a ``loop`` or ``matmul`` group: values at an index, loops and
    stores here; reduction passes in reduction.py, the product of a matmul group in matmul.py."""

    def __init__(self, group: FusionGroup, par_min: int):
        self.g = group
        F, A = group.space, group.axes
        self.var = [f"r{d}" if d in A else f"i{d}" for d in range(len(F))]
        self.full = tuple(self.var)
        self.outer_idx = tuple(self.var[d] for d in range(len(F)) if d not in A)
        self.defined = {r: op for op in group.ops for r in op.results}
        KernelNames.__init__(self)
        self.inner_names: set = set()
        self.acc: dict = {}          # reduction op -> name of its result
        self.work = 1
        for n in F:
            self.work *= n
        if group.head is not None:
            # A matmul's parallel variant splits the BLAS call into row or column blocks across
            # Numba's threads (BLAS itself runs single-threaded: blas_threads.single_threaded_blas).
            a, b = group.head.operands
            self.work = max(self.work, a.shape[-2] * a.shape[-1] * b.shape[-1] // MATMUL_WORK)
        self.par_min = par_min
        outer = [d for d in range(len(F)) if d not in A]
        # the dim ``lo:hi`` index: the first outer one (matmul groups: see parallel_gemm)
        self.span = F[outer[0]] if outer and group.head is None else 0
        self.splittable = self.span > 0
        self.min_block = 1
        self.flat = {} if _is_flat(group, self.defined) else None   # value -> its 1-D view
        self.half = half_accurate(group)
        self.passing_stores: list = []   # (value, output) the reduction pass being made stores
        self.in_place = None             # KernelSpec.in_place (a matmul adding to an input)

    # -- names ---------------------------------------------------------------------------
    @staticmethod
    def new_block(inner: bool) -> "_Block":
        return _Block(inner)

    def is_inner(self, *exprs) -> bool:
        return any(t in self.inner_names or (t[0] == "r" and t[1:].isdigit())
                   for e in exprs for t in _TOKEN.findall(e))

    def invariant(self, expr: str) -> bool:
        """Whether ``expr`` depends on no loop: then it is computed once, before the loops,
        instead of per element (NumPy computes ``np.tanh(a[i, i])`` once; a kernel that
        broadcasts it would call tanh for every element of its loop nest)."""
        return all(t in self.invariant_names or t in _INVARIANT_GLOBALS or _PARAM.fullmatch(t)
                   for t in _TOKEN.findall(_ATTRIBUTE.sub("", expr)))

    def put(self, expr: str, inner: bool, prefix="t") -> str:
        name = self.tmp(prefix)
        if self.invariant(expr):
            self.prologue.append(f"{name} = {expr}")
            self.invariant_names.add(name)
            return name
        block = self.block if inner else self.outer
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
                self.prologue.append(f"{name} = {load(v.dtype, self.array(v) + '[()]')}")
                self.invariant_names.add(name)
                return name
            if self.flat is not None:
                return self.put(load(v.dtype, f"{self.flat_view(v)}[i0]"), False)
            sub = ", ".join(idx) if idx else "()"
            if len(idx) == 1:
                sub += ","
            return self.put(load(v.dtype, f"{self.array(v)}[{sub}]"), self.is_inner(*idx))
        if is_reduction(op):
            assert same_index(idx, self.outer_idx, self.g.outer), (op, idx)
            return self.acc[op]
        if op is self.g.head:
            assert same_index(idx, self.full, self.g.space), (op, idx)
            # the product buffer holds the compute type: a float16 product is rounded here
            mm = f"mm[{', '.join(idx) or '()'}{',' if len(idx) == 1 else ''}]"
            return self.put(rounded(v.dtype, mm), self.is_inner(*idx))
        if self.flat is not None and op.opdef is ops.reshape:
            # the same elements in the same (C) order: the operand's own flat view
            return self.put(load(v.dtype, f"{self.flat_view(op.operands[0])}[i0]"), False)
        if (op.opdef is ops.reshape and idx and op.operands[0] not in self.defined
                and not is_scalar_constant(op.operands[0])):
            # A reshape of a materialized (C-contiguous) array is a view: index the view
            # directly instead of re-deriving each coordinate with integer division.
            sub = ", ".join(idx) + ("," if len(idx) == 1 else "")
            return self.put(load(v.dtype, f"{self.reshaped_view(op)}[{sub}]"),
                            self.is_inner(*idx))
        kind, rule = emitters.RULES[op.opdef]
        if kind == "index":
            return self.value(op.operands[0], self.index_map(op, idx))
        if op.opdef is ops.iota:
            return self.put(emitters.iota_expr(op, idx), self.is_inner(*idx))
        assert kind == "scalar", op
        args = [self.value(o, idx) for o in op.operands]
        if (op.opdef is ops.div and op.result.dtype.name == "float32"
                and self.is_inner(args[0]) and not self.is_inner(args[1])):
            return self.put(self.divide_by_invariant(*args), True)
        return self.put(emitters.scalar_expr(op, *args, half=v in self.half),
                        self.is_inner(*args))

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
        mapped = op.opdef.index_map(op, idx)
        if "?" not in mapped:
            # A permutation or selection of the index (broadcast, transpose, a reshape that
            # only adds or drops size-1 dims, a trivial slice): the op's symbolic index map
            # (ops.py) is the code. What it cannot say ("?") needs arithmetic: the op's
            # ``index`` rule, below.
            return mapped
        return emitters.RULES[op.opdef][1](self, op, idx)

    # -- loop structure ------------------------------------------------------------------
    def store(self, v, idx, o):
        name = self.value(v, idx)
        sub = ", ".join(idx) if idx else "()"
        if len(idx) == 1:
            sub += ","
        return f"{o}[{sub}] = {store(v.dtype, name)}"

    def flat_view(self, v, name: str | None = None) -> str:
        """The 1-D view of array ``v`` (an input, or output ``name``) in a flat kernel."""
        if v not in self.flat:
            self.flat[v] = f"f{len(self.flat)}"
            self.prologue.append(f"{self.flat[v]} = {name or self.array(v)}.reshape((fn,))")
        return self.flat[v]

    def generate(self) -> KernelSpec:
        g = self.g
        outs = list(g.outputs)
        onames = {v: f"o{i}" for i, v in enumerate(outs)}
        self.outer = _Block(False)
        self.block = self.outer
        self.prologue: list[str] = []
        self.invariant_names: set = set()     # computed in the prologue
        if self.flat is not None:
            return self.generate_flat(outs, onames)
        # the product is computed into its own output, except where that output's storage
        # is not the product's compute type (float16: stored from the float32 product)
        mm_out = (g.head.result if g.head is not None and held(g.head.result.dtype) is None
                  else None)
        stored = [v for v in outs if v is not mm_out]
        levels = self.levels()
        if self.column_reduction(levels, stored):
            body = self.column_body(levels[0], stored, onames)
            params = self.params(outs, onames)
            return self.spec(params, self.prologue + body, outs)
        full_outs = [v for v in stored if v.shape == g.space] if g.axes else []
        # full-size outputs that need no reduction's result are stored by the first pass,
        # which visits every element once: no output pass computes them again (exp(z) that
        # softmax's sum reads and its backward keeps)
        self.passing_stores = [(v, onames[v]) for v in full_outs
                               if levels and not self.reads_reduction(v)]
        full_outs = [v for v in full_outs if (v, onames[v]) not in self.passing_stores]
        self.scratch = self.scratch_outputs(levels, full_outs, onames) if g.axes else {}
        for reds in levels:
            self.reduction_pass(reds)
            self.passing_stores = []
        if g.axes:
            if full_outs:
                self.block = _Block(True)
                for w, o in self.scratch.items():
                    self.block.memo[(w, self.full)] = self.put(load(w.dtype, (
                        f"{o}[{', '.join(self.full)}{',' if len(self.full) == 1 else ''}]")), True)
                stores = [self.store(v, self.full, onames[v]) for v in full_outs]
                self.outer.lines.extend(self.inner_loops(self.block.lines + stores, ""))
            self.block = self.outer
            self.outer.lines.extend(self.store(v, self.outer_idx, onames[v])
                                    for v in stored if v.shape != g.space)
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
        if body and loops and not epilogue and g.head is None and not g.reductions:
            body = _nest(body, loops, [f"i{d}" for d in range(len(g.space))])
        else:
            body = loops + [pad + b for b in body] if body and not epilogue else []
        pre = self.matmul_prelude(onames, epilogue) if g.head is not None else []
        if g.head is not None and body:
            self.splittable = False     # loops after the product read all of it: one call
        # Inputs are named lazily while the body is generated; the prelude may add some.
        params = self.params(outs, onames)
        # 0-d loads first: a merged epilogue runs inside each block of the product
        return self.spec(params, self.prologue + pre + body, outs)

    def generate_flat(self, outs: list, onames: dict) -> KernelSpec:
        """An elementwise group over one shape, every array C-contiguous: one loop over the
        elements of its 1-D views, instead of a loop nest. LLVM vectorizes one loop whatever
        the shape (a nest of (100000, 3) only its inner loop of 3), and compiles it faster
        (an SGD update's module: 19 ms of LLVM 1-D, 30 ms 2-D). The arguments keep their
        rank (the plan and native callers pass them as for any kernel); the kernel makes the
        views. Blocks ``lo:hi`` split the elements (a batch of one splits too)."""
        g = self.g
        self.full = self.outer_idx = ("i0",)
        self.span = self.work
        dims = [self.size(("F", d), n) for d, n in enumerate(g.space)]
        self.prologue.append(f"fn = {' * '.join(dims)}")
        stores = [f"{self.flat_view(v, onames[v])}[i0] = "
                  f"{store(v.dtype, self.value(v, self.full))}" for v in outs]
        body = ["for i0 in range(lo, hi):"] + ["    " + line for line in self.outer.lines + stores]
        params = self.params(outs, onames)
        return self.spec(params, self.prologue + body, outs)

    def params(self, outs, onames) -> list:
        """The kernel's parameters: inputs, outputs, scalars, sizes (named as generated)."""
        return ([self._names[v] for v in self.inputs] + [onames[v] for v in outs]
                + [self._names[v] for v in self.scalars]
                + [f"s{i}" for i in range(len(self.sizes))])

    def spec(self, params, body, outs) -> KernelSpec:
        parallel = self.splittable and self.span >= 2 and self.work >= self.par_min
        return KernelSpec(function_source(params, body), list(self.inputs), outs,
                          list(self.scalars), self.sizes, parallel, self.work, self.span,
                          self.min_block, in_place=self.in_place)

def _is_flat(g: FusionGroup, defined: dict) -> bool:
    """Whether group ``g`` computes each element of its outputs from the elements at the same
    (C-order) position of its inputs: elementwise ops over its whole space, scalars broadcast,
    reshapes of arrays it reads. Then it can run as one loop over 1-D views."""
    if g.kind != "loop" or g.head is not None or g.axes or len(g.space) < 2:
        return False
    if any(v.shape != g.space for v in g.outputs):
        return False
    for op in g.ops:
        if op.result.shape != g.space:
            return False
        x = op.operands[0] if op.operands else None
        if op.opdef is ops.broadcast_in_dim and x.shape == ():
            continue
        if op.opdef is ops.reshape and x not in defined and not is_scalar_constant(x):
            continue
        if emitters.RULES.get(op.opdef, ("",))[0] != "scalar" or op.opdef is ops.iota:
            return False
        if any(o.shape != g.space for o in op.operands):
            return False
    return True


_DEFINES = re.compile(r"(\w+) = ")


def _nest(lines: list, loops: list, loop_vars: list) -> list:
    """``lines`` inside the perfectly nested ``loops``, each just inside the outermost loop
    that covers every loop index it uses (through the temporaries it reads): a value that
    depends on the rows only (``np.tanh(v)[:, None] + x``) is computed once per row, as NumPy
    computes it, not once per element."""
    level: dict = {}
    placed: list = [[] for _ in loops]
    defined = [m.group(1) for m in map(_DEFINES.match, lines) if m]
    # A name assigned twice (an accumulator) is updated in the innermost loop: keep it there.
    updated = {n for n in defined if defined.count(n) > 1}
    for line in lines:
        m = _DEFINES.match(line)
        used = _TOKEN.findall(line[m.end():] if m else line)
        k = max([loop_vars.index(t) if t in loop_vars else level.get(t, 0) for t in used],
                default=0)
        if m and m.group(1) in updated:
            k = len(loops) - 1
        if m:
            level[m.group(1)] = k
        placed[k].append(line)
    out = []
    for k, header in enumerate(loops):
        out.append(header)
        out.extend("    " * (k + 1) + line for line in placed[k])
    return out


def generate_kernel(group: FusionGroup, par_min: int) -> KernelSpec:
    if group.kind in ("loop", "matmul"):
        # LoopKernel.value recurses along each chain of fused ops (a few frames per op): the
        # gradient of a 400-step loop unrolled by Python sums 400 terms in one group, deeper
        # than Python's default limit of 1000 frames
        with _recursion_limit(8 * len(group.ops) + 1000):
            return LoopKernel(group, par_min).generate()
    (op,) = group.ops
    kind, rule = emitters.RULES[op.opdef]
    assert kind == "kernel", (f"{op}: no kernel rule (see {templates.__name__}, "
                              f"{linalg_kernels.__name__})")
    return rule(op, group)


@contextlib.contextmanager
def _recursion_limit(n: int):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, n))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


# -- index rules: the arithmetic of a layout op's index map where it says "?" -----------------
@emitters.register("index", ops.broadcast_in_dim, ops.transpose)
def _(k: LoopKernel, op, idx: tuple) -> tuple:
    return op.opdef.index_map(op, idx)      # never "?": a selection or permutation


@emitters.register("index", ops.slice)
def _(k: LoopKernel, op, idx: tuple) -> tuple:
    # starts and steps are size parameters too, so that structurally equal kernels (the im2col
    # slices of a convolution) share compiled code
    out = []
    for d, (i, s, st) in enumerate(zip(idx, op.attrs["starts"], op.attrs["steps"])):
        if s == 0 and st == 1:
            out.append(i)
            continue
        start = k.size((id(op), "start", d), s)
        out.append(f"({start} + {k.size((id(op), 'step', d), st)} * {i})"
                   if st != 1 else f"({start} + {i})")
    return tuple(out)


@emitters.register("index", ops.rev)
def _(k: LoopKernel, op, idx: tuple) -> tuple:
    x = op.operands[0]
    return tuple(f"({k.size((id(op), d), x.shape[d])} - 1 - {i})"
                 if d in op.attrs["dims"] else i for d, i in enumerate(idx))


@emitters.register("index", ops.window)
def _(k: LoopKernel, op, idx: tuple) -> tuple:
    nd = op.operands[0].type.ndim
    out = list(idx[:nd])
    for j, d in enumerate(op.attrs["dims"]):
        out[d] = f"({idx[d]} + {idx[nd + j]})"
    return tuple(out)


@emitters.register("index", ops.reshape)
def _(k: LoopKernel, op, idx: tuple) -> tuple:
    """A reshape that regroups dims: the linear index, then each operand coordinate."""
    x, shape = op.operands[0], op.attrs["shape"]
    inner = k.is_inner(*idx)
    lin = idx[0] if idx else "0"
    for j in range(1, len(idx)):
        lin = f"({lin} * {k.size((id(op), 'o', j), shape[j])} + {idx[j]})"
    lin = k.put(lin, inner, "x")
    out, stride = [], 1
    for j in reversed(range(x.type.ndim)):
        s = k.size((id(op), "st", j), stride)
        d = k.size((id(op), "d", j), x.shape[j])
        out.append(k.put(f"({lin} // {s}) % {d}", inner, "x"))
        stride *= x.shape[j]
    return tuple(reversed(out))
