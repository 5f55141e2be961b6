"""The executable plan: a whole Function as one generated Python entry function.

The entry checks its arguments' shapes and dtypes (sizes are written into it: a new shape is a
new trace, which costs milliseconds, and the kernels it calls are generic over sizes, so no
kernel compiles again), takes each intermediate's bytes from the program's arena, calls the
kernels in order (a large one on blocks in several threads, ``threads.py``), lets NumPy do the
groups that only move data (``movement.py``), and returns the results. It is plain Python:
every kernel is compiled once, in its own module, and nothing links kernels into an entry and
optimizes them again. Calling a kernel costs about a microsecond of Numba's dispatch, a few
percent of a training step. ``optimization_barrier`` results alias their operands, and
``debug_print`` prints from the entry. A ``cond`` is an ``if``/``elif`` in the entry, each
branch's groups planned (fused, kernels compiled as usual) into its own lines; a ``scan`` or
``while_loop`` is one native module (loops.py), or, when its body has an op that no native
module can run, a Python loop in the entry (noted in a comment there). control.py writes the
statements of both.
"""
from __future__ import annotations

import math

import numpy as np
from numba import from_dtype, types

from ..config import config
from ..ir import Function, ops
from ..ir.passes import fuse, optimize
from ..ir.passes.fusion import Fusion
from ..ir.passes.liveness import nbytes
from .arena import pack
from . import control, emitters  # noqa: F401  (control registers its plan rules)
from .kernel import generate_kernel
from .loops import Unsupported, native_loop
from .source import KernelSpec
from .movement import is_movement, movement_lines
from .numpy_tier import NumpyProgram
from .representation import compute_dtype, held, scalar_value, storage_dtype

# Work (elements, or a matmul's multiply-adds / 64) from which a kernel runs on blocks in all
# threads (threads.py). Measured with benchmarks.backend's run_parallel_min.
PARALLEL_MIN = 1 << 17

# Loop groups (and gathers) of at most this many elements run their ops on NumPy inside the
# entry instead of compiling a kernel. Off by default (0): for the MLP step, 2048 (its
# cross-entropy pieces) cut the cold compile from 4.9 to 2.7-3.0 s, but cost 0.5-1.5 ms a step
# (5.0 -> 5.5-6.0 ms, measured in one process): NumPy's per-op overhead on ten small groups.
# config.numpy_group_max (TRACEJIT_NUMPY_GROUP_MAX) sets it, for programs compiled often and
# run little.

# Results of at least this many bytes are written into buffers that the Program keeps and
# passes in (``r*`` parameters), reusing one when the caller no longer holds the result of an
# earlier call. A fresh large buffer costs page faults on first touch: the elementwise chain at
# N = 1e7 ran in 6.1 ms into a reused output, 8.5 ms into a new one (9.9 ms with
# MADV_HUGEPAGE, whose direct compaction stalls here). Above glibc's mmap threshold (128 KiB)
# malloc maps fresh pages too, and the faults of two threads writing one fresh result
# serialize: a parallel 320x320 float64 matmul took 1.77 ms into a fresh result (serial
# 1.83 ms), 1.09 ms into a reused one (serial 1.74 ms). Smaller buffers come back from
# malloc's heap without faults.
POOL_MIN = 1 << 17


def array_type(v):
    """The Numba type of a kernel's array holding ``v``: every one is C-contiguous, of the
    storage dtype (uint16 for float16: representation.py)."""
    return types.Array(from_dtype(storage_dtype(v.type.dtype)), v.type.ndim, "C")


class Plan:
    def __init__(self, fusion: Fusion, par_min: int = PARALLEL_MIN,
                 numpy_max: int | None = None):
        self.fusion = fusion
        fn = fusion.function
        self.fn = fn
        self.par_min = par_min
        self.numpy_max = config.numpy_group_max if numpy_max is None else numpy_max
        self.names: dict = {p: f"p{i}" for i, p in enumerate(fn.params)}
        self.globals: dict = {}            # name -> object, the entry's module globals
        self.lines: list[str] = []
        self.kernels: list[KernelSpec] = []
        self.kernel_groups: list = []      # the fusion group of each kernel
        self.kernel_sources: list[str] = []   # each kernel's module source (with signature)
        self.signatures: list[tuple] = []  # each kernel's one signature
        self.parallel: list[int] = []      # the kernels the entry runs on blocks in threads
        self.addressed: list[int] = []     # kernels called by address from other kernels
        self.pooled: list = []             # result Values written into r* parameters
        self.scratch: list = []            # (Value, group index, line index, name)
        self.arena_bytes: int | None = None   # the arena's size, if any buffer is in it
        self.buffers = 0
        self._scalars: dict = {}           # scalar constant Value -> its global's name
        self._region_results: set = set()  # results of the regions being planned
        self._fresh: set | None = None     # inside a region: names of the arrays it made
        self._temps = 0
        self._build()

    # -- names ------------------------------------------------------------------------------
    def constant(self, prefix: str, value) -> str:
        name = f"{prefix}{sum(k.startswith(prefix) for k in self.globals)}"
        self.globals[name] = value
        return name

    def scalar(self, v) -> str:
        """A scalar constant, passed to kernels as a NumPy scalar of its compute dtype."""
        if v not in self._scalars:
            self._scalars[v] = self.constant("C", scalar_value(v.dtype, v.op.attrs["value"][()]))
        return self._scalars[v]

    def kernel_array(self, v) -> str:
        """The name of an array holding ``v`` as kernels take it: the entry holds float16 as
        np.float16 (NumPy's own float16 for movement, sorts, results), kernels its bits."""
        name = self.array(v)
        return name if held(v.dtype) is None else f"{name}.view({self.storage_name(v)})"

    def storage_name(self, v) -> str:
        return self.dtype_name(storage_dtype(v.type.dtype))

    def array_dtype(self, dt) -> str:
        """control.py: the dtype of an array the entry makes (NumPy's own, float16 too)."""
        return "np.bool_" if dt.is_bool else f"np.{dt.name}"

    def array(self, v) -> str:
        """The name of an array holding ``v`` (a parameter, constant or buffer)."""
        if v not in self.names:
            assert v.op is not None and v.op.opdef is ops.constant, v
            self._plan_rule(v.op)
        return self.names[v]

    def _plan_rule(self, op):
        kind, rule = emitters.RULES[op.opdef]
        assert kind == "plan", op
        rule(self, op)

    def _constant(self, op):
        arr = np.array(op.attrs["value"], copy=True, order="C")   # the planned layout
        self.names[op.result] = self.constant("q", arr)

    def _alias(self, op):
        for r, v in zip(op.results, op.operands):
            self.names[r] = self.array(v)

    def _call(self, op):
        raise ValueError("the plan needs a Function without call ops: run inline_calls")

    def buffer(self, v) -> str:
        if self._fresh is not None:        # inside a region: no arena, no pool
            name = self.new_name("b")
            self.lines.append(f"{name} = np.empty({tuple(v.shape)}, {self._dtype(v)})")
            self.names[v] = name
            self._fresh.add(name)
            return name
        if v in self._results and nbytes(v) >= POOL_MIN:
            self.names[v] = name = f"r{len(self.pooled)}"
            self.pooled.append(v)
            return name
        name = f"b{self.buffers}"
        self.buffers += 1
        if v.shape and self._root(v) not in self._escaping:
            # an intermediate: its bytes in the arena ``w`` (the line is written by _pack)
            self.scratch.append((v, self._group, len(self.lines), name))
            self.lines.append("")
        else:
            self.lines.append(f"{name} = np.empty({tuple(v.shape)}, {self._dtype(v)})")
        self.names[v] = name
        return name

    def _dtype(self, v) -> str:
        return self.dtype_name(v.type.dtype.np)

    def dtype_name(self, dt) -> str:
        for name, value in self.globals.items():
            if name.startswith("D") and value == dt:
                return name
        return self.constant("D", dt)

    # -- intermediates in the arena ---------------------------------------------------------
    def _storage(self):
        """Which value's buffer each alias or reshape view shares (``_root``), and the buffers
        that a result may share: those stay out of the arena (a caller keeps results).
        An ``update_slice`` writes into its operand's buffer when nothing reads that buffer
        after it (``_in_place``)."""
        self._shares: dict = {}
        self._in_place: set = set()
        last: dict = {}                 # a value -> the last group reading it
        for i, g in enumerate(self.fusion.groups):
            for v in g.inputs:
                last[v] = i
        results = set(self.fn.results)
        # per buffer (a root value): the last group reading it or a value sharing it, and
        # whether one of those is a result
        use: dict = {}

        def usage(v):
            return use.get(v, (last.get(v, -1), v in results))

        def share(r, v):
            root = self._root(v)
            self._shares[r] = root      # straight to the root: loops make long chains
            (a, b), (c, d) = usage(root), usage(r)
            use.pop(r, None)
            use[root] = (max(a, c), b or d)
        for i, g in enumerate(self.fusion.groups):
            if g.kind == "alias" or self._is_view(g):
                for op in g.ops:
                    for r, v in zip(op.results, op.operands):
                        share(r, v)
            elif g.kind == "op" and g.ops[0].opdef is ops.update_slice:
                op = g.ops[0]
                root = self._root(op.operands[0])
                read_until, escapes = usage(root)
                if (read_until <= i and not escapes and root not in self._params
                        and root.op is not None and not self._is_constant(root)):
                    # nothing reads x's buffer after this: write the box into it (a loop's
                    # x[i] = v costs the box, not the whole array)
                    share(op.result, op.operands[0])
                    self._in_place.add(op.result)
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
        spans = [(first, max(first, last.get(v, first)), nbytes(v))
                 for v, first, _, _ in self.scratch]
        offsets, self.arena_bytes = pack(spans)
        for (v, _, line, name), off in zip(self.scratch, offsets):
            self.lines[line] = (f"{name} = w[{off}:{off + nbytes(v)}].view({self._dtype(v)})"
                                f".reshape({tuple(v.shape)})")

    # -- groups -----------------------------------------------------------------------------
    def _build(self):
        self._results = set(self.fn.results)
        self._params = set(self.fn.params)
        # Sizes are written into the entry, so it checks that its arguments have them:
        # JittedFunction's fast path calls the last program it used without looking.
        bad = [f"p{i}.shape != {tuple(p.type.shape)} or p{i}.dtype != "
               f"{self.dtype_name(p.type.dtype.np)}" for i, p in enumerate(self.fn.params)]
        if bad:
            self.lines += [f"if {' or '.join(bad)}:", "    raise ArgumentMismatch()"]
            # other layouts: Program.run copies the arguments into the planned one
            layout = " and ".join(f"p{i}.flags.c_contiguous" for i in range(len(bad)))
            self.lines += [f"if not ({layout}):", "    raise TypeError('not C-contiguous')"]
        self._storage()
        for i, g in enumerate(self.fusion.groups):
            self._group = i          # buffer() notes which group writes each intermediate
            self._plan_group(g)
        self._return()

    def _plan_group(self, g):
        if g.kind in ("alias", "effect"):
            self._plan_rule(g.ops[0])
        elif g.kind == "control":
            self._control(g.ops[0])
        elif self._is_view(g):
            self._reshape_view(g.ops[0])
        elif is_movement(g):
            result = g.outputs[0]
            if result in self._in_place:             # update_slice into x's own buffer
                out = self.names[result] = self.array(g.ops[0].operands[0])
            else:
                out = self.buffer(result)
            self.lines += movement_lines(g, self.array, out)
        elif self._small(g):
            self._numpy_group(g)
        else:
            self._kernel_call(g)

    def _return(self):
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
                and op.result not in self._results and op.result not in self._region_results)

    def _reshape_view(self, op):
        name = f"b{self.buffers}"
        self.buffers += 1
        self.lines.append(f"{name} = {self.array(op.operands[0])}.reshape("
                          f"{tuple(op.result.shape)})")
        self.names[op.result] = name

    def _small(self, g) -> bool:
        if g.kind == "loop":
            work = math.prod(g.space)
        elif g.kind == "op" and emitters.kind_of(g.ops[0].opdef) == "kernel":
            work = math.prod(g.ops[0].result.shape)
        else:
            return False
        return work <= self.numpy_max

    def _numpy_group(self, g):
        """A small group's ops run by the NumPy tier's executor: fresh C-contiguous arrays."""
        runner = self.constant("G", NumpyProgram(Function(
            f"g{g.id}", list(g.inputs), list(g.ops), list(g.outputs))))
        outs = []
        for v in g.outputs:
            self.names[v] = name = f"b{self.buffers}"
            self.buffers += 1
            outs.append(name)
            if self._fresh is not None:
                self._fresh.add(name)
        ins = ", ".join(self.array(v) for v in g.inputs)
        self.lines.append(f"{', '.join(outs)}, = {runner}([{ins}])")

    # -- control ops (control.py writes their statements) ---------------------------------------
    entry = True        # control.py: statements of the Python entry, not of a native module

    def new_name(self, prefix: str = "v") -> str:
        self._temps += 1
        return f"{prefix}_{self._temps}"

    def bind(self, v, name: str):
        self.names[v] = name

    def region(self, fn: Function, arg_names: list, carries=(0, 0)) -> tuple[list, list]:
        """A region's statements (its groups planned like the Function's own, buffers from
        ``np.empty``) with its parameters bound to ``arg_names``, and its results' names:
        each a fresh array (a parameter or constant returned is copied), so that a result of
        a control op never aliases an operand, which may live in the arena. (``carries``:
        which parameters a loop carries, for a native loop's in-place updates; unused here.)"""
        fusion = fuse(optimize(fn))
        inner = fusion.function
        for p, name in zip(inner.params, arg_names):
            self.names[p] = name
        saved = self.lines, self._fresh, self._region_results
        self.lines, self._fresh = [], set()
        self._region_results = self._region_results | set(inner.results)
        try:
            for g in fusion.groups:
                self._plan_group(g)
            results = []
            for r in inner.results:
                name = self.array(r)
                if name not in self._fresh:
                    copy = self.new_name("b")
                    self.lines.append(f"{copy} = {name}.copy()")
                    self._fresh.add(copy)
                    name = copy
                results.append(name)
            return self.lines, results
        finally:
            self.lines, self._fresh, self._region_results = saved

    def _control(self, op):
        """A loop as one native module if its body allows (loops.py), else as Python
        statements here, like a ``cond``."""
        if op.opdef is not ops.cond:
            try:
                spec = native_loop(op)
            except Unsupported as why:
                self.lines.append(f"# {op.opdef.name}: a Python loop in the entry, its body's "
                                  f"kernels called once per iteration ({why})")
            else:
                self._call_kernel(None, spec)
                return
        emitters.RULES[op.opdef][1](self, op)

    def _kernel_call(self, g):
        self._call_kernel(g, generate_kernel(g, self.par_min))

    def _add_kernel(self, g, spec: KernelSpec, addresses: int = 0) -> int:
        """Add a kernel module to the plan; its index."""
        sig = tuple([array_type(v) for v in spec.inputs + spec.outputs]
                    + [from_dtype(compute_dtype(v.type.dtype).np) for v in spec.scalars]
                    + [types.int64] * (addresses + len(spec.sizes) + 2))
        self.kernels.append(spec)
        self.kernel_groups.append(g)
        self.signatures.append(sig)
        # The signature is part of the module's source: a kernel module has exactly one, so
        # its dispatcher is closed to compiling others (a copy kernel reads the same at any
        # dtype).
        self.kernel_sources.append(spec.source + f"# kernel({', '.join(map(str, sig))})\n")
        return len(self.kernels) - 1

    def _call_kernel(self, g, spec: KernelSpec):
        # kernels it calls by address: the program puts their addresses in globals A<index>
        addresses = []
        for callee in spec.callees:
            j = self._add_kernel(None, callee)
            self.addressed.append(j)
            addresses.append(f"A{j}")
        k = self._add_kernel(g, spec, len(addresses))
        ins = [self.kernel_array(v) for v in spec.inputs]
        for v in spec.outputs:
            self.buffer(v)
        outs = [self.kernel_array(v) for v in spec.outputs]
        scalars = [self.scalar(v) for v in spec.scalars]
        args = ", ".join(ins + outs + scalars + addresses + [str(n) for n in spec.sizes])
        if spec.parallel:
            self.parallel.append(k)
            self.lines.append(f"pool.run(k{k}, ({args},), {spec.span}, {spec.min_block})")
        else:
            self.lines.append(f"k{k}({args}, 0, {spec.span})")

    def _debug_print(self, op):
        fmt = self.constant("F", op.attrs["fmt"])
        args = ", ".join(self.array(v) for v in op.operands)
        self.lines.append(f"print({fmt}.format({args}))")

    # -- the entry ----------------------------------------------------------------------------
    @property
    def params(self) -> list[str]:
        ps = [f"p{i}" for i in range(len(self.fn.params))]
        ps += [f"r{i}" for i in range(len(self.pooled))]
        return ps + (["w"] if self.scratch else [])

    @property
    def source(self) -> str:
        body = "\n".join("    " + line for line in self.lines)
        return f"def entry({', '.join(self.params)}):\n{body}\n"


emitters.register("plan", ops.constant)(Plan._constant)
emitters.register("plan", ops.optimization_barrier)(Plan._alias)
emitters.register("plan", ops.debug_print)(Plan._debug_print)
emitters.register("plan", ops.call)(Plan._call)
