"""One fusion group -> the source of one ``@cuda.jit`` kernel.

Three shapes of kernel, all generic over sizes (every size is a parameter ``s*``, every
scalar constant ``c*``, as in the CPU kernels, so a new batch size compiles nothing):

- elementwise (a ``loop`` group without reductions): a grid-stride loop over the flattened
  output space; each thread turns its flat index into the space's indices, then computes
  every value at that index (layout ops are index arithmetic: the ops' own index maps and the
  CPU kernels' ``index`` rules, which only ask this class for ``size``/``put``).
- reduction (a ``loop`` group with axes A): one block per outer element (grid-stride over
  them); the threads stride over the flattened reduced space, then a tree reduction in
  shared memory. Each level of reductions (softmax: max, then the sum of exp(x - max)) is one
  such pass; full-size outputs are a last strided pass. Deterministic: the order depends only
  on the block size, never on timing (no atomics).
- partial reduction + final pass (a one-level reduction whose outputs are few and inputs
  many, e.g. a full sum at N = 1e8, where one block per output would leave the device idle):
  ``P`` blocks per output each reduce an interleaved share into a partial (``scratch``), then
  a second kernel (``final``) reduces each output's ``P`` partials in a fixed order and
  computes the epilogue. ``P`` comes from the device (launch.py): deterministic on a device.
- matmul (a ``matmul`` group): a tiled shared-memory GEMM, ``T x T`` threads per output
  tile, the epilogue (bias, activation, the other outputs) fused after the product.

The block size of reductions and the tile are constants of the source (shared arrays need
them), chosen from the device (launch.py).
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import numpy as np

from ...ir import ops
from ...ir.passes.fusion import FusionGroup, is_reduction
from .. import emitters
from .. import kernel as _cpu_kernel  # noqa: F401  (registers the layout ops' index rules)
from ..representation import lit, scalar_type
from ..kernel import is_scalar_constant
from ..source import KernelNames
from ..reduction import Reductions
from . import devicelib
from .scalars import scalar_rule

HEADER = f"""import math
import numpy as np
from numba import cuda
from numba import boolean, int8, int16, int32, int64, uint8, uint16, uint32, uint64
from numba import float32, float64
from tracejit.codegen.runtime import ifloordiv, iremainder, ifmod, f2i32, f2i64, f2u64
{devicelib.IMPORTS}
"""


def numba_type_name(dtype) -> str:
    return "boolean" if dtype.is_bool else dtype.name


def array_type_name(v) -> str:
    """The kernel signature's type of an array holding ``v``: C-contiguous; a 0-d value is
    held as one element of a 1-d array (the CUDA target has no 0-d array arguments)."""
    nd = max(v.type.ndim, 1)
    return f"{numba_type_name(v.type.dtype)}[{', '.join([':'] * (nd - 1) + ['::1'])}]"


@dataclass
class CudaKernelSpec:
    """A kernel's source and how to launch it."""
    kind: str               # elementwise | reduction | matmul
    source: str
    inputs: list            # Values passed as arrays a*
    outputs: list           # Values written o*
    scalars: list           # scalar constant Values c*
    sizes: list             # ints s*
    work: tuple             # elementwise: (n,); reduction: (outer elements,);
    #                         matmul: (column tiles, row tiles, batch)
    threads: tuple          # the block shape the source assumes (elementwise: any)
    notes: list = field(default_factory=list)
    # partial reductions: the partials' arrays [(numba dtype name, length)], passed after the
    # outputs, written by this kernel and read by ``final`` (its second pass)
    scratch: list = field(default_factory=list)
    final: "CudaKernelSpec | None" = None

    @property
    def signature(self) -> str:
        parts = [array_type_name(v) for v in self.inputs + self.outputs]
        parts += [f"{dtype}[::1]" for dtype, _ in self.scratch]
        parts += [numba_type_name(v.type.dtype) for v in self.scalars]
        parts += ["int64"] * len(self.sizes)
        return f"void({', '.join(parts)})"


class CudaKernel(KernelNames):
    def __init__(self, group: FusionGroup, reduce_threads: int, tile: int, parts: int = 1,
                 final_of: "CudaKernelSpec | None" = None):
        self.g = group
        self.tpb = reduce_threads
        self.tile = tile
        self.parts = parts           # > 1: the partials kernel of a two-pass reduction
        self.final_of = final_of     # the partials kernel this one is the final pass of
        self.defined = {r: op for op in group.ops for r in op.results}
        KernelNames.__init__(self)
        self.acc: dict = {}
        self.lines: list = []
        self.scopes: list = [{}]
        self.mm = None
        self.scratch_arrays: list = []     # partials kernels: [(dtype name, length)]

    # -- names (the interface the CPU kernels' index rules use) ------------------------------
    def is_inner(self, *exprs) -> bool:
        return True            # no loop nest to place values in: one thread, one index

    def put(self, expr: str, inner: bool = True, prefix: str = "t") -> str:
        name = self.tmp(prefix)
        self.lines.append(f"{name} = {expr}")
        return name

    @contextlib.contextmanager
    def scope(self, indent: int = 1):
        """Lines (and values) local to a nested block, indented by ``indent`` levels."""
        saved = self.lines
        self.lines = []
        self.scopes.append({})
        block = self.lines
        try:
            yield block
        finally:
            self.scopes.pop()
            self.lines = saved
            saved.extend("    " * indent + line for line in block)

    # -- values at an index ----------------------------------------------------------------
    def value(self, v, idx: tuple) -> str:
        key = (v, idx)
        for memo in reversed(self.scopes):
            if key in memo:
                return memo[key]
        name = self._value(v, idx)
        self.scopes[-1][key] = name
        return name

    def _value(self, v, idx: tuple) -> str:
        op = self.defined.get(v)
        if op is None:
            if is_scalar_constant(v):
                return self.scalar(v)
            sub = ", ".join(idx) if idx else "0"
            return self.put(f"{self.array(v)}[{sub}]")
        if is_reduction(op):
            return self.acc[op]
        if op is self.g.head:
            return self.mm
        kind, rule = emitters.RULES[op.opdef]
        if kind == "index":
            mapped = op.opdef.index_map(op, idx)
            if "?" in mapped:
                mapped = rule(self, op, idx)
            return self.value(op.operands[0], tuple(mapped))
        if op.opdef is ops.iota:
            if op.results[0].dtype.is_int:    # wraps (np.int8(300) of a Python int raises)
                i = idx[op.attrs["dim"]]
                return self.put(f"{scalar_type(op.results[0].dtype)}(np.int64({i}))")
            return self.put(emitters.iota_expr(op, idx))
        args = [self.value(o, idx) for o in op.operands]
        return self.put(scalar_rule(op.opdef)(op, *args))

    def store(self, v, idx: tuple, out: str) -> str:
        name = self.value(v, idx)
        return f"{out}[{', '.join(idx) if idx else '0'}] = {name}"

    def unflatten(self, flat: str, dims: list):
        """Lines setting the index variables ``dims`` ([(name, size)], row-major) from
        ``flat``."""
        x = flat
        for k in range(len(dims) - 1, 0, -1):
            name, n = dims[k]
            s = self.size(("F", name), n)
            self.lines.append(f"{name} = {x} % {s}")
            q = self.tmp("q")
            self.lines.append(f"{q} = {x} // {s}")
            x = q
        if dims:
            self.lines.append(f"{dims[0][0]} = {x}")

    # -- kernels ---------------------------------------------------------------------------
    def generate(self) -> CudaKernelSpec:
        g = self.g
        self.var = [f"r{d}" if d in g.axes else f"i{d}" for d in range(len(g.space))]
        self.outnames = {v: f"o{i}" for i, v in enumerate(g.outputs)}
        if g.head is not None:
            body, work, threads = self.matmul_body()
            kind = "matmul"
        elif self.final_of is not None:
            body, work, threads = self.final_body()
            kind = "final_reduction"
        elif self.parts > 1:
            body, work, threads = self.partials_body()
            kind = "partial_reduction"
            self.outnames = {}
        elif g.axes or any(is_reduction(op) for op in g.ops):
            # (a reduction over no axes, of a 0-d value, is a reduction of one element)
            body, work, threads = self.reduction_body()
            kind = "reduction"
        else:
            body, work, threads = self.elementwise_body()
            kind = "elementwise"
        scratch = self.final_of.scratch if self.final_of is not None else self.scratch_arrays
        params = ([self._names[v] for v in self.inputs] + list(self.outnames.values())
                  + [f"p{i}" for i in range(len(scratch))]
                  + [self._names[v] for v in self.scalars]
                  + [f"s{i}" for i in range(len(self.sizes))])
        source = (HEADER + f"\n\ndef kernel({', '.join(params)}):\n"
                  + "\n".join("    " + line for line in body) + "\n")
        outputs = list(self.outnames)
        return CudaKernelSpec(kind, source, list(self.inputs), outputs, list(self.scalars),
                              list(self.sizes), work, threads, scratch=list(scratch))

    def elementwise_body(self):
        g = self.g
        total = math.prod(g.space)
        n = self.size(("n",), total)
        self.lines = []
        with self.scope() as _:
            self.unflatten("f", list(zip(self.var, g.space)))
            for v in g.outputs:
                self.lines.append(self.store(v, tuple(self.var), self.outnames[v]))
        body = [f"for f in range(cuda.grid(1), {n}, cuda.gridsize(1)):"] + self.lines
        return body, (total,), (0,)

    def reduction_body(self):
        g = self.g
        outer_dims = [(self.var[d], n) for d, n in enumerate(g.space) if d not in g.axes]
        red_dims = [(self.var[d], n) for d, n in enumerate(g.space) if d in g.axes]
        nout = self.size(("nout",), math.prod(g.outer))
        nred = self.size(("nred",), math.prod(n for _, n in red_dims))
        full = tuple(self.var)
        outer_idx = tuple(name for name, _ in outer_dims)
        tpb = self.tpb
        head = ["tid = cuda.threadIdx.x"]
        self.lines = []
        with self.scope():
            self.unflatten("ob", outer_dims)
            for level in Reductions.levels(self):
                self.reduction_level(level, red_dims, nred, head)
            fulls = [v for v in g.outputs if v.shape == g.space and v.shape != g.outer]
            if fulls:
                self.lines.append(f"for rf in range(tid, {nred}, {tpb}):")
                with self.scope():
                    self.unflatten("rf", red_dims)
                    for v in fulls:
                        self.lines.append(self.store(v, full, self.outnames[v]))
            outers = [v for v in g.outputs if v not in fulls]
            stores = [self.store(v, outer_idx, self.outnames[v]) for v in outers]
            if stores:
                self.lines.append("if tid == 0:")
                self.lines.extend("    " + s for s in stores)
        body = head + [f"for ob in range(cuda.blockIdx.x, {nout}, cuda.gridDim.x):"] + self.lines
        return body, (math.prod(g.outer),), (tpb,)

    def reduction_level(self, reds: list, red_dims: list, nred: str, head: list,
                        start: str = "tid", step: str | None = None, partials=None) -> list:
        """One level's strided pass and tree; sets ``self.acc``. With ``partials`` (the final
        pass: op -> (values, indices) of its partials, each output's ``nred`` of them in a
        row) the strided pass reads partials instead of the reduced values. Returns
        [(op, kind, x, acc)]: ``sh{acc}[0]`` holds the result until the next level's pass."""
        tpb, full = self.tpb, tuple(self.var)
        step = step or str(tpb)
        info = []
        for op in reds:
            x, kind = op.operands[0], op.opdef.name
            acc = self.tmp("acc")
            dtype = _acc_dtype(kind, x.dtype)
            head.append(f"sh{acc} = cuda.shared.array({tpb}, {numba_type_name(dtype)})")
            self.lines.append(f"{acc} = {_init(kind, x.dtype)}")
            if kind in ("argmax", "argmin"):
                head.append(f"sh{acc}_i = cuda.shared.array({tpb}, int64)")
                # no index yet: past every index (the final pass reads partials' indices)
                self.lines.append(f"{acc}_i = {nred if partials is None else _NO_INDEX}")
            info.append((op, kind, x, acc))
        self.lines.append(f"for rf in range({start}, {nred}, {step}):")
        with self.scope():
            if partials is None:
                self.unflatten("rf", red_dims)
            for op, kind, x, acc in info:
                if partials is None:
                    self.lines += _update(kind, x.dtype, acc, self.value(x, full), "rf")
                    continue
                values, indices = partials[op]
                at = f"ob * {nred} + rf"
                index = f"{indices}[{at}]" if indices else "rf"
                self.lines += _update(kind, x.dtype, acc, f"{values}[{at}]", index)
        for op, kind, x, acc in info:
            self.lines.append(f"sh{acc}[tid] = {acc}")
            if kind in ("argmax", "argmin"):
                self.lines.append(f"sh{acc}_i[tid] = {acc}_i")
        self.lines += ["cuda.syncthreads()", f"half = {tpb // 2}", "while half > 0:",
                       "    if tid < half:"]
        for op, kind, x, acc in info:
            other = f"sh{acc}[tid + half]"
            if kind in ("argmax", "argmin"):
                self.lines += ["        " + line for line in _update(
                    kind, x.dtype, f"sh{acc}[tid]", other, f"sh{acc}_i[tid + half]",
                    f"sh{acc}_i[tid]")]
            else:
                self.lines.append(f"        sh{acc}[tid] = "
                                  f"{_combine(kind, x.dtype, f'sh{acc}[tid]', other)}")
        self.lines += ["    cuda.syncthreads()", "    half //= 2"]
        for op, kind, x, acc in info:
            if kind in ("argmax", "argmin"):
                self.acc[op] = self.put(f"sh{acc}_i[0]", prefix="red")
            else:
                self.acc[op] = self.put(f"{scalar_type(op.result.dtype)}(sh{acc}[0])", prefix="red")
        self.lines.append("cuda.syncthreads()")     # all have read [0] before the next writes
        return info

    # -- two-pass reductions ---------------------------------------------------------------
    def _red_dims(self):
        g = self.g
        outer = [(self.var[d], n) for d, n in enumerate(g.space) if d not in g.axes]
        red = [(self.var[d], n) for d, n in enumerate(g.space) if d in g.axes]
        return outer, red

    def partials_body(self):
        """Pass 1: block ``blk`` reduces share ``blk % P`` (elements ``part*T + tid`` with
        stride ``P*T``) of output ``blk // P`` into the partials ``p*[blk]``."""
        g, P, tpb = self.g, self.parts, self.tpb
        outer_dims, red_dims = self._red_dims()
        nout = self.size(("nout",), math.prod(g.outer))
        nred = self.size(("nred",), math.prod(n for _, n in red_dims))
        sP = self.size(("parts",), P)
        (reds,) = Reductions.levels(self)
        head = ["tid = cuda.threadIdx.x"]
        self.lines = []
        with self.scope():
            self.lines += [f"ob = blk // {sP}", f"part = blk % {sP}"]
            self.unflatten("ob", outer_dims)
            info = self.reduction_level(reds, red_dims, nred, head, start=f"part * {tpb} + tid",
                                        step=f"{sP} * {tpb}")
            # drop the trailing reads of [0] and sync: thread 0 alone reads [0] below
            del self.lines[-1 - len(info):]
            self.lines.append("if tid == 0:")
            for op, kind, x, acc in info:
                dtype = numba_type_name(_acc_dtype(kind, x.dtype))
                self.lines.append(f"    p{len(self.scratch_arrays)}[blk] = sh{acc}[0]")
                self.scratch_arrays.append((dtype, math.prod(g.outer) * P))
                if kind in ("argmax", "argmin"):
                    self.lines.append(f"    p{len(self.scratch_arrays)}[blk] = sh{acc}_i[0]")
                    self.scratch_arrays.append(("int64", math.prod(g.outer) * P))
            self.lines.append("cuda.syncthreads()")
        body = head + [f"for blk in range(cuda.blockIdx.x, {nout} * {sP}, cuda.gridDim.x):"]
        return body + self.lines, (math.prod(g.outer) * P,), (tpb,)

    def final_body(self):
        """Pass 2: one block per output reduces its ``P`` partials in a fixed order, then the
        group's epilogue at the output's index (the one-pass kernel's stores)."""
        g, tpb = self.g, self.tpb
        outer_dims, _ = self._red_dims()
        nout = self.size(("nout",), math.prod(g.outer))
        sP = self.size(("parts",), self.parts)
        (reds,) = Reductions.levels(self)
        partials, k = {}, 0
        for op in reds:
            arg = op.opdef.name in ("argmax", "argmin")
            partials[op] = (f"p{k}", f"p{k + 1}" if arg else None)
            k += 2 if arg else 1
        head = ["tid = cuda.threadIdx.x"]
        self.lines = []
        with self.scope():
            self.unflatten("ob", outer_dims)
            self.reduction_level(reds, [], sP, head, partials=partials)
            stores = [self.store(v, tuple(n for n, _ in outer_dims), self.outnames[v])
                      for v in g.outputs]
            self.lines.append("if tid == 0:")
            self.lines.extend("    " + s for s in stores)
        body = head + [f"for ob in range(cuda.blockIdx.x, {nout}, cuda.gridDim.x):"] + self.lines
        return body, (math.prod(g.outer),), (tpb,)

    def matmul_body(self):
        g, T = self.g, self.tile
        a, b = g.head.operands
        space = g.space
        nb = len(space) - 2
        M, N, K = space[-2], space[-1], a.shape[-1]
        sM, sN, sK = (self.size(("M",), M), self.size(("N",), N), self.size(("K",), K))
        batch = math.prod(space[:-2])
        sB = self.size(("batch",), batch)
        tiles_m, tiles_n = -(-M // T), -(-N // T)
        sTM, sTN = self.size(("tiles_m",), tiles_m), self.size(("tiles_n",), tiles_n)
        dt = numba_type_name(g.head.result.dtype)
        bvars = [(self.var[d], space[d]) for d in range(nb)]
        bidx = tuple(v for v, _ in bvars)
        iM, iN = self.var[nb], self.var[nb + 1]
        # float products accumulate in their dtype, as BLAS does; integers in int64, cast
        # (wrapping as NumPy's int32 matmul does) at the end
        acc_init = f"{scalar_type(g.head.result.dtype)}(0)" if g.head.result.dtype.is_float else "0"
        body = [f"ta = cuda.shared.array(({T}, {T}), {dt})",
                f"tb = cuda.shared.array(({T}, {T}), {dt})",
                "tx = cuda.threadIdx.x", "ty = cuda.threadIdx.y",
                f"for bz in range(cuda.blockIdx.z, {sB}, cuda.gridDim.z):"]
        self.lines = []
        with self.scope():
            self.unflatten("bz", bvars)
            self.lines.append(f"for by in range(cuda.blockIdx.y, {sTM}, cuda.gridDim.y):")
            with self.scope():
                self.lines.append(f"for bx in range(cuda.blockIdx.x, {sTN}, cuda.gridDim.x):")
                with self.scope():
                    self.lines += [f"{iM} = by * {T} + ty", f"{iN} = bx * {T} + tx",
                                   f"acc = {acc_init}",
                                   f"for kt in range(0, {sK}, {T}):"]
                    with self.scope():
                        self.lines += ["ka = kt + tx", f"if {iM} < {sM} and ka < {sK}:"]
                        with self.scope():
                            self.lines.append(f"ta[ty, tx] = {self.value(a, bidx + (iM, 'ka'))}")
                        self.lines += ["else:", "    ta[ty, tx] = 0",
                                       "kb = kt + ty", f"if kb < {sK} and {iN} < {sN}:"]
                        with self.scope():
                            self.lines.append(f"tb[ty, tx] = {self.value(b, bidx + ('kb', iN))}")
                        self.lines += ["else:", "    tb[ty, tx] = 0", "cuda.syncthreads()",
                                       f"for kk in range({T}):",
                                       "    acc += ta[ty, kk] * tb[kk, tx]",
                                       "cuda.syncthreads()"]
                    self.lines.append(f"if {iM} < {sM} and {iN} < {sN}:")
                    with self.scope():
                        self.mm = self.put(f"{scalar_type(g.head.result.dtype)}(acc)", prefix="mm")
                        for v in g.outputs:
                            self.lines.append(self.store(v, tuple(self.var), self.outnames[v]))
        return body + self.lines, (tiles_n, tiles_m, batch), (T, T)


_NO_INDEX = "9223372036854775807"


def _acc_dtype(kind: str, dtype):
    from ...ir import dtypes
    # unsigned sums and products in uint64: the same bits as int64 on the device, but the
    # simulator's NumPy refuses to store a uint64 >= 2**63 into an int64 shared array
    wide = dtypes.uint64 if dtype.is_unsigned else dtypes.int64
    if kind == "reduce_sum":
        return dtypes.float64 if dtype.is_float else (dtype if dtype.is_bool else wide)
    if kind == "reduce_prod" and not dtype.is_float:
        return wide
    return dtype


def _init(kind: str, dtype) -> str:
    if kind == "reduce_sum":
        return "0.0" if dtype.is_float else ("False" if dtype.is_bool else "0")
    if kind == "reduce_prod":
        return lit(dtype, 1) if dtype.is_float else "1"
    if dtype.is_bool:
        return "False" if kind in ("reduce_max", "argmax") else "True"
    if kind in ("reduce_max", "argmax"):
        if dtype.is_int or dtype.is_unsigned:
            return lit(dtype, np.iinfo(dtype.np).min)
        return f"{scalar_type(dtype)}(-np.inf)"
    if dtype.is_int or dtype.is_unsigned:
        return lit(dtype, np.iinfo(dtype.np).max)
    return f"{scalar_type(dtype)}(np.inf)"


def _combine(kind: str, dtype, acc: str, v: str) -> str:
    if kind == "reduce_sum":
        if dtype.is_bool:
            return f"{acc} | {v}"
        return f"{acc} + np.float64({v})" if dtype.is_float else f"{acc} + {v}"
    if kind == "reduce_prod":
        return f"{acc} * {v}"
    if dtype.is_bool:
        return f"{acc} | {v}" if kind == "reduce_max" else f"{acc} & {v}"
    cmp = ">" if kind == "reduce_max" else "<"
    nan = f" or {v} != {v}" if dtype.is_float else ""
    return f"{v} if ({v} {cmp} {acc}{nan}) else {acc}"


def _update(kind, dtype, acc, v, index, acc_index=None) -> list:
    """Lines folding ``v`` (at flat reduced index ``index``) into ``acc``. argmax/argmin keep
    the first index of the best value, NumPy's answer: NaN is best; ties go to the smaller
    index (the tree meets indices out of order)."""
    if kind not in ("argmax", "argmin"):
        return [f"{acc} = {_combine(kind, dtype, acc, v)}"]
    ai = acc_index or f"{acc}_i"
    cmp = ">" if kind == "argmax" else "<"
    better = f"({v} {cmp} {acc}) or ({v} == {acc} and {index} < {ai})"
    if dtype.is_float:
        better += f" or ({v} != {v} and ({acc} == {acc} or {index} < {ai}))"
    return [f"if {better}:", f"    {acc} = {v}", f"    {ai} = {index}"]


def two_pass_reduction(group: FusionGroup) -> bool:
    """Whether ``group`` can run as partials + final pass: a reduction group of one level
    (no value reduced twice, as softmax's exp(x - max) is) storing no full-size value."""
    if group.head is not None or not group.axes:
        return False
    reds = [op for op in group.ops if is_reduction(op)]
    reduced = {op.results[0] for op in reds}
    defined = {r: op for op in group.ops for r in op.results}

    def depends(v, seen) -> bool:
        op = defined.get(v)
        if op is None or op in seen:
            return False
        seen.add(op)
        return v in reduced or any(depends(o, seen) for o in op.operands)

    return (all(v.shape != group.space or v.shape == group.outer for v in group.outputs)
            and not any(depends(op.operands[0], set()) for op in reds))


def generate_cuda_kernel(group: FusionGroup, reduce_threads: int, tile: int,
                         parts: int = 1) -> CudaKernelSpec:
    """The kernel of ``group``; with ``parts`` > 1 (only where two_pass_reduction says so)
    the partials kernel, its ``final`` pass attached."""
    if parts <= 1:
        return CudaKernel(group, reduce_threads, tile).generate()
    spec = CudaKernel(group, reduce_threads, tile, parts).generate()
    spec.final = CudaKernel(group, reduce_threads, tile, parts, final_of=spec).generate()
    return spec
