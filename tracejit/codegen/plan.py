"""The executable plan: a whole Function as ONE generated ``@njit`` entry function.

The entry takes the arguments, the constant arrays, and two packed arrays: ``fc`` (scalar float
constants) and ``ic`` (every size, every integer or bool constant, and each kernel's choice of
its parallel variant). It allocates each group's output buffers, calls the kernels (and BLAS,
inside matmul kernels) in order, and returns the results, so a call from Python is one Numba
dispatcher call. Sizes live in ``ic``, not in the source, so a new batch size produces the same
entry source: nothing is compiled again. ``optimization_barrier`` results alias their operands,
and ``debug_print`` calls back into Python through ``numba.objmode``.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np
from numba import from_dtype, types
from numba.core.errors import NumbaPerformanceWarning

from ..ir import ops
from ..ir.passes.fusion import Fusion
from ..ir.passes.liveness import nbytes
from . import cache
from .arena import Arena, pack
from .emitters import np_name
from .kernel import KernelSpec, generate_kernel
from .warm_load import load_cached

# Iteration spaces of at least this many elements get a parallel (prange) kernel variant, used
# when the run-time size is at least as large. Measured on 2 cores with passive OpenMP workers
# (benchmarks/backend.py run_parallel_min, the elementwise chain, serial vs parallel us):
# 2^14 21 vs 61, 2^15 48 vs 79, 2^16 89 vs 89, 2^17 166 vs 128, 2^18 304 vs 196. With the
# workers spinning longer (runtime.OMP_SPINCOUNT) the parallel variant wins earlier: the chain
# from 2^13 (1.2-1.7x), a cheap ``x * y + x`` from 2^16 (1.35x; even at 2^15). Kept at 2^17:
# at 2^16 the MLP training step was no faster (2.81-2.87 ms, noise) and compiled 2 s longer.
PARALLEL_MIN = 1 << 17

# Results of at least this many bytes are written into buffers that the Program keeps and
# passes in (``r*`` parameters), reusing one when the caller no longer holds the result of an
# earlier call. A fresh large buffer costs page faults on first touch: the elementwise chain at
# N = 1e7 ran in 6.1 ms into a reused output, 8.5 ms into a new one (9.9 ms with
# MADV_HUGEPAGE, whose direct compaction stalls here). Smaller buffers come back from
# malloc's heap without faults anyway.
POOL_MIN = 1 << 20


class Plan:
    def __init__(self, fusion: Fusion, par_min: int = PARALLEL_MIN):
        self.fusion = fusion
        fn = fusion.function
        self.fn = fn
        self.par_min = par_min
        self.names: dict = {p: f"p{i}" for i, p in enumerate(fn.params)}
        self.const_arrays: list = []       # np arrays passed as q*
        self.fc: list[float] = []
        self.ic: list[int] = []
        self.lines: list[str] = []
        self.imports: list[str] = []
        self.kernels: list[KernelSpec] = []
        self.kernel_groups: list = []      # the fusion group of each kernel
        self.modules: list = []
        self.prints: list[str] = []
        self.pooled: list = []             # result Values written into r* parameters
        self.scratch: list = []            # (Value, group index, ic index of its offset)
        self.arena_bytes: int | None = None   # the arena's size, if any buffer is in it
        self.buffers = 0
        self._scalar_slot: dict = {}
        self._build()

    # -- constants and sizes ----------------------------------------------------------------
    def int_slot(self, value: int) -> str:
        self.ic.append(int(value))
        return f"ic[{len(self.ic) - 1}]"

    def scalar(self, v) -> str:
        """A scalar constant as a typed by-value expression (from fc or ic)."""
        if v not in self._scalar_slot:
            value = v.op.attrs["value"][()]
            dt = v.dtype
            if dt.is_float:
                self.fc.append(float(value))
                expr = f"{np_name(dt)}(fc[{len(self.fc) - 1}])"
            elif dt.is_bool:
                expr = f"({self.int_slot(bool(value))} != 0)"
            else:
                expr = f"{np_name(dt)}({self.int_slot(int(value))})"
            self._scalar_slot[v] = expr
        return self._scalar_slot[v]

    def array(self, v) -> str:
        """The name of an array holding ``v`` (a parameter, constant or buffer)."""
        if v not in self.names:
            assert v.op is not None and v.op.opdef is ops.constant, v
            arr = np.array(v.op.attrs["value"], copy=True, order="C")   # the planned layout
            self.const_arrays.append(arr)
            self.names[v] = f"q{len(self.const_arrays) - 1}"
        return self.names[v]

    def buffer(self, v) -> str:
        if v in self._results and nbytes(v) >= POOL_MIN:
            self.names[v] = name = f"r{len(self.pooled)}"
            self.pooled.append(v)
            return name
        name = f"b{self.buffers}"
        self.buffers += 1
        dims = ", ".join(self.int_slot(n) for n in v.shape)
        shape = f"({dims},)" if v.shape else "()"
        if v.shape and self._root(v) not in self._escaping:
            # an intermediate: its bytes in the arena ``w`` (offset patched in by _pack)
            start = self.int_slot(0)
            self.scratch.append((v, self._group, len(self.ic) - 1))
            end = f"{start} + {self.int_slot(nbytes(v))}"
            self.lines.append(f"{name} = w[{start}:{end}].view({np_name(v.dtype)})"
                              f".reshape({shape})")
        else:
            self.lines.append(f"{name} = advise_huge_pages(np.empty({shape}, "
                              f"{np_name(v.dtype)}))")
        self.names[v] = name
        return name

    # -- intermediates in the arena ---------------------------------------------------------
    def _storage(self):
        """Which value's buffer each alias or reshape view shares (``_root``), and the buffers
        that a result may share: those stay out of the arena (a caller keeps results)."""
        self._shares: dict = {}
        for g in self.fusion.groups:
            if g.kind == "alias" or self._is_view(g):
                for op in g.ops:
                    for r, v in zip(op.results, op.operands):
                        self._shares[r] = v
        self._escaping = {self._root(r) for r in self.fn.results}

    def _root(self, v):
        while v in self._shares:
            v = self._shares[v]
        return v

    def _pack(self):
        """Offsets of the arena's buffers: alive from the group that writes one to the last
        group that reads it or any alias or view of it."""
        if not self.scratch:
            return
        last: dict = {}
        for i, g in enumerate(self.fusion.groups):
            for v in g.inputs:
                last[self._root(v)] = i
        spans = [(first, max(first, last.get(v, first)),
                  nbytes(v))
                 for v, first, _ in self.scratch]
        offsets, self.arena_bytes = pack(spans)
        for (_, _, slot), offset in zip(self.scratch, offsets):
            self.ic[slot] = offset

    # -- groups -----------------------------------------------------------------------------
    def _build(self):
        self._results = set(self.fn.results)
        self._params = set(self.fn.params)
        # Sizes live in ic, so the entry checks that its arguments have them (a few compares):
        # JittedFunction's fast path calls the last program it used without looking at shapes.
        checks = [f"p{i}.shape[{d}] != {self.int_slot(n)}"
                  for i, p in enumerate(self.fn.params) for d, n in enumerate(p.type.shape)]
        if checks:
            self.lines += [f"if {' or '.join(checks)}:", "    raise ArgumentMismatch()"]
        self._storage()
        for i, g in enumerate(self.fusion.groups):
            self._group = i          # buffer() notes which group writes each intermediate
            if g.kind == "alias":
                (op,) = g.ops
                for r, v in zip(op.results, op.operands):
                    self.names[r] = self.array(v)
            elif g.kind == "effect":
                self._debug_print(g.ops[0])
            elif self._is_view(g):
                self._reshape_view(g.ops[0])
            else:
                self._kernel_call(g)
        # Results are fresh arrays: one that would share memory with an argument, a constant
        # (which must not change when a caller writes into it) or another result (CSE merged
        # ``x * 2, x * 2``) is copied. jit restores identity where the user returned one
        # object twice.
        results, returned = [], set()
        for r in self.fn.results:
            root = self._root(r)
            shared = root in self._params or self._is_constant(root) or root in returned
            returned.add(root)
            results.append(self.array(r) + (".copy()" if shared else ""))
        self.lines.append(f"return ({', '.join(results)}{',' if len(results) == 1 else ''})")
        self._pack()

    @staticmethod
    def _is_constant(v) -> bool:
        return v.op is not None and v.op.opdef is ops.constant

    def _is_view(self, g) -> bool:
        """A group of one reshape of an array: a view of it (every array here is C-contiguous),
        unless it is a result (results never alias arguments or each other)."""
        if g.kind != "loop" or len(g.ops) != 1 or g.ops[0].opdef is not ops.reshape:
            return False
        op = g.ops[0]
        return (op.operands[0].type.ndim > 0 and op.result.type.ndim > 0
                and op.result not in self._results)

    def _reshape_view(self, op):
        name = f"b{self.buffers}"
        self.buffers += 1
        dims = ", ".join(self.int_slot(n) for n in op.result.shape)
        self.lines.append(f"{name} = {self.array(op.operands[0])}.reshape(({dims},))")
        self.names[op.result] = name

    def _kernel_call(self, g):
        spec = generate_kernel(g, self.par_min)
        mod = cache.load(spec.source)
        k = len(self.kernels)
        self.kernels.append(spec)
        self.kernel_groups.append(g)
        self.modules.append(mod)
        self.imports.append(f"from {mod.__name__} import ser as k{k}s"
                            + (f", par as k{k}p" if spec.parallel else ""))
        ins = [self.array(v) for v in spec.inputs]
        outs = [self.buffer(v) for v in spec.outputs]
        scalars = [self.scalar(v) for v in spec.scalars]
        sizes = [self.int_slot(n) for n in spec.sizes]
        args = ", ".join(ins + outs + scalars + sizes)
        if spec.parallel:
            flag = self.int_slot(spec.work >= self.par_min)
            self.lines += [f"if {flag}:", f"    k{k}p({args})", "else:", f"    k{k}s({args})"]
        else:
            self.lines.append(f"k{k}s({args})")

    def _debug_print(self, op):
        k = len(self.prints)
        self.prints.append(f"def _print{k}(*xs):\n    print({op.attrs['fmt']!r}.format(*xs))\n")
        args = ", ".join(self.array(v) for v in op.operands)
        self.lines += ["with objmode():", f"    _print{k}({args})"]

    # -- the entry module -------------------------------------------------------------------
    @property
    def params(self) -> list[str]:
        ps = [f"p{i}" for i in range(len(self.fn.params))]
        ps += [f"q{i}" for i in range(len(self.const_arrays))]
        ps += [f"r{i}" for i in range(len(self.pooled))]
        ps += ["w"] if self.scratch else []
        return ps + ["fc", "ic"]

    @property
    def source(self) -> str:
        head = ["import numpy as np", "from numba import njit, objmode",
                "from tracejit.codegen.runtime import advise_huge_pages",
                "from tracejit.tracer.errors import ArgumentMismatch"] + self.imports
        body = "\n".join("    " + line for line in self.lines)
        prints = "\n".join(self.prints)
        # The argument types are part of the source, so each module's entry has exactly one
        # signature and Program can disable further compilation of it.
        types_line = "# entry(" + ", ".join(str(t) for t in self.signature()) + ")"
        return ("\n".join(head) + "\n\n" + prints + "\n" + types_line + "\n"
                f"@njit(cache=True, error_model=\"numpy\")\n"
                f"def entry({', '.join(self.params)}):\n{body}\n")

    def signature(self):
        def arr(dt, ndim):
            return types.Array(from_dtype(dt), ndim, "C")
        sig = [arr(p.type.dtype.np, p.type.ndim) for p in self.fn.params]
        sig += [arr(a.dtype, a.ndim) for a in self.const_arrays]
        sig += [arr(v.type.dtype.np, v.type.ndim) for v in self.pooled]
        sig += [arr(np.dtype(np.uint8), 1)] if self.scratch else []
        return tuple(sig + [arr(np.dtype(np.float64), 1), arr(np.dtype(np.int64), 1)])


class Program:
    """``program(leaves) -> tuple of arrays``: one call of the compiled entry."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.function = plan.fn
        self.fusion = plan.fusion
        # Programs of other functions (in other threads too) share this entry when their code
        # is the same: one at a time checks, loads or compiles it, and closes it.
        with cache.lock:
            mod = cache.load(plan.source, prefix="e")
            self.entry = mod.entry
            sig = plan.signature()      # a module's entry has one (its source says which)
            with warnings.catch_warnings():
                # Advice about generated code (e.g. a BLAS call on a strided view) is ours to
                # act on, not the user's: benchmarks/profile_plan.py is where it shows.
                warnings.simplefilter("ignore", NumbaPerformanceWarning)
                if sig not in self.entry.overloads and not load_cached(self.entry, sig):
                    self.entry.compile(sig)
            # Only the planned signature runs: other argument types raise TypeError, not a
            # compile of the plan for types it was not traced with.
            self.entry.disable_compile()
            cache.seal([mod, *plan.modules])
        consts = tuple(plan.const_arrays)
        sizes = (np.array(plan.fc, np.float64), np.array(plan.ic, np.int64))
        self._scalars = [(i, p.type.dtype.np) for i, p in enumerate(self.function.params)
                         if p.type.shape == ()]
        entry, scalars = self.entry, self._scalars
        self.buffers = buffers = _ResultPool(plan.pooled) if plan.pooled else None
        self.arena = arena = Arena(plan.arena_bytes) if plan.scratch else None
        self._consts, self._sizes = consts, sizes
        if arena is not None:
            def call(leaves):
                w = arena.take()
                try:
                    return entry(*leaves, *consts, *(buffers() if buffers else ()), w, *sizes)
                finally:
                    arena.give(w)
        elif buffers is None:
            extra = consts + sizes

            def call(leaves):
                return entry(*leaves, *extra)
        else:
            def call(leaves):
                return entry(*leaves, *consts, *buffers(), *sizes)
        # ``guarded(leaves)``: the call with no checks in Python (the entry checks shapes, the
        # dispatcher types), for callers that fall back to ``run`` on TypeError or
        # ArgumentMismatch. Programs with 0-d parameters convert Python scalars first.
        self.guarded = None if scalars else call

        def run(leaves):
            leaves = list(leaves)
            for i, dt in scalars:
                leaves[i] = np.asarray(leaves[i], dt)
            try:
                return call(leaves)
            except TypeError:
                # not C-contiguous, read-only or unaligned arrays: the planned layout, copied
                leaves = [np.require(a, requirements=["C", "W", "A"]) for a in leaves]
                return call(leaves)
        self.run = run

    def __call__(self, leaves):
        return self.run(leaves)

    def arguments(self, leaves) -> list:
        """Everything the entry takes, in order, for these leaves (what ``run`` passes)."""
        pooled = self.buffers() if self.buffers is not None else []
        arena = [self.arena.take()] if self.arena is not None else []
        return [*leaves, *self._consts, *pooled, *arena, *self._sizes]

    @property
    def sources(self) -> str:
        parts = [f"# kernel k{i}: {m.__name__}\n{k.source}"
                 for i, (k, m) in enumerate(zip(self.plan.kernels, self.plan.modules))]
        return "\n".join(parts + [f"# entry\n{self.plan.source}"])


class _ResultPool:
    """The buffers for a program's large results (see POOL_MIN): one per result, reused while
    nothing outside holds it. A caller's result, or any view of it (its ``base``), holds a
    reference to the buffer; a buffer with more references than one that only the pool holds
    is left to its holder and a new one is made. What ``sys.getrefcount`` reports for such a
    buffer differs between CPython versions (3.14 borrows references on the stack), so it is
    not assumed: it is measured on every call, on an array that only the pool holds, through
    the same code (``_references``) as the buffers. (Memory stays held between calls, as in a
    caching allocator: one buffer per large result of each compiled program.)"""

    def __init__(self, values):
        self.specs = [(tuple(v.shape), v.type.dtype.np) for v in values]
        self.pool = [None] * len(values)
        self._unheld = [np.empty(0)]      # referred to by this list only

    def __call__(self) -> list:
        free = _references(self._unheld, 0)
        pool = self.pool
        for i, (shape, dtype) in enumerate(self.specs):
            if pool[i] is None or _references(pool, i) > free:
                pool[i] = np.empty(shape, dtype)
        return list(pool)


def _references(items: list, i: int) -> int:
    """``sys.getrefcount`` of ``items[i]`` as seen from here (the pool's one code path)."""
    return sys.getrefcount(items[i])


def compile_plan(fusion: Fusion) -> Program:
    from .blas import resolve_blas
    from .runtime import configure_threads, single_threaded_blas
    with cache.lock:                # once-per-process set-ups: finished before any program runs
        configure_threads()
        if any(g.kind == "matmul" for g in fusion.groups):
            single_threaded_blas()
            resolve_blas()
    return Program(Plan(fusion))
