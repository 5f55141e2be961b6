"""Loading and running a plan: its kernels compiled (or loaded from the disk cache) once,
its entry executed as Python, and the buffers a program keeps between calls."""
from __future__ import annotations

import atexit
import linecache
import sys
import threading
import warnings
from collections import deque

import numpy as np
from numba.core.errors import NumbaPerformanceWarning

from ..ir.passes.fusion import Fusion
from . import cache
from . import handoff
from .arena import Arena
from .compile_workers import compile_all, compile_in_threads
from .errors import ArgumentMismatch
from .plan import Plan
from .threads import pool
from .warm_load import load_cached


def _planned_layout(a, dt):
    """``a`` as the kernels take it: C-contiguous, writeable and aligned, copied if not. A
    copy larger than the memory left is MemoryError: a broadcast view of a scalar
    (np.broadcast_to(x, (2**16, 2**16)), no memory of its own) was copied into 16 GiB, and
    Linux killed the process (SIGKILL) while the copy was written."""
    if (isinstance(a, np.ndarray) and a.nbytes > _COPY_CHECK_BYTES
            and not (a.flags.c_contiguous and a.flags.writeable and a.flags.aligned)):
        free = _available_memory()
        if free is not None and a.nbytes > free:
            kind = ("a broadcast view (a stride of 0)" if 0 in a.strides
                    else "not a C-contiguous, writeable, aligned array")
            raise MemoryError(
                f"tracejit: an argument of shape {a.shape} and dtype {a.dtype} is {kind}; "
                f"compiled kernels read a C-contiguous copy, which needs "
                f"{a.nbytes / 2**30:.1f} GiB, more than the {free / 2**30:.1f} GiB of memory "
                f"available\nWhat to do: pass the smaller array and broadcast it inside the "
                f"jitted function (np.broadcast_to there is free), or pass a contiguous array")
    return np.require(a, dt if getattr(a, "dtype", None) == dt else None, ["C", "W", "A"])


_COPY_CHECK_BYTES = 1 << 28


def _available_memory() -> int | None:
    """Bytes of memory the system can still give (Linux's MemAvailable plus free swap), or
    None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            fields = dict(line.split(":", 1) for line in f)
        kb = int(fields["MemAvailable"].split()[0]) + int(fields.get("SwapFree", "0 kB").split()[0])
        return kb * 1024
    except (OSError, KeyError, ValueError):
        return None


class Program:
    """``program(leaves) -> tuple of arrays``: one call of the plan's entry."""

    def __init__(self, plan: Plan, in_process_only: bool = False, setup=None):
        """``in_process_only``: raise NotCached unless every kernel is compiled in this
        process already (nothing is loaded from disk or compiled). ``setup()`` is run before
        any kernel does (compile_plan)."""
        self.plan = plan
        self.function = plan.fn
        self.fusion = plan.fusion
        # Programs of other functions (in other threads too) share kernels when their code is
        # the same: one at a time loads, checks and compiles them.
        with cache.lock:
            compiled = _Compiled(plan.kernel_sources, plan.signatures, in_process_only, setup)
            if setup is not None:
                setup()             # if no compile ran it
        self.modules, self.direct = compiled.modules, compiled.direct
        self.kernels = [compiled.callable(k) for k in range(len(self.modules))]
        self._address = compiled.address
        # Parallel kernels run on threads.py's pool until the native hand-off's modules are
        # ready: they are loaded or compiled in the background once the first call has
        # returned (before, the compile took the GIL from the first call: chain 1.06 -> 1.45 s).
        self.runner = runner = handoff.Runner({}, pool)
        tramps = _trampolines(plan)
        if not tramps:
            runner.ready.set()
        self._handoff = None if not tramps else (
            lambda: _in_background(lambda: _prepare_handoff(plan, self, tramps, runner)))
        self.entry = _entry(plan, self, runner)
        self._scalars = [(i, p.type.dtype.np) for i, p in enumerate(self.function.params)
                         if p.type.shape == ()]
        dtypes = [p.type.dtype.np for p in self.function.params]
        entry, scalars = self.entry, self._scalars
        self.buffers = buffers = _ResultPool(plan.pooled) if plan.pooled else None
        self.arena = arena = Arena(plan.arena_bytes) if plan.scratch else None
        if arena is not None:
            def call(leaves):
                w = arena.take()
                try:
                    return entry(*leaves, *(buffers() if buffers else ()), w)
                finally:
                    arena.give(w)
        elif buffers is None:
            def call(leaves):
                return entry(*leaves)
        else:
            def call(leaves):
                return entry(*leaves, *buffers())
        # ``guarded(leaves)``: the call with no checks in Python outside the entry's (shapes
        # and dtypes: ArgumentMismatch; layout: TypeError), for callers that fall back to
        # ``run``. Programs with 0-d parameters convert Python scalars first.
        self.guarded = None if scalars else call

        def run(leaves):
            if self._handoff is not None:
                try:
                    return checked(leaves)
                finally:
                    self.start_handoff()
            return checked(leaves)

        def checked(leaves):
            leaves = list(leaves)
            for i, dt in scalars:
                leaves[i] = np.asarray(leaves[i], dt)
            try:
                return call(leaves)
            except TypeError:
                # not C-contiguous, read-only or unaligned arrays: the planned layout, copied;
                # a dtype equal to the planned one but another type (np.longlong beside
                # np.int64, which a direct kernel checks by type) viewed as the planned one
                leaves = [_planned_layout(a, dt) for a, dt in zip(leaves, dtypes)]
                return call(leaves)
        self.run = run

    def __call__(self, leaves):
        return self.run(leaves)

    def start_handoff(self):
        """Start building the native hand-off (once)."""
        start, self._handoff = self._handoff, None
        if start is not None:
            start()

    def wait_handoff(self):
        """Wait until the parallel kernels are handed off natively (or never will be)."""
        self.start_handoff()
        self.runner.ready.wait()

    def arguments(self, leaves) -> list:
        """Everything the entry takes, in order, for these leaves (what ``run`` passes)."""
        pooled = self.buffers() if self.buffers is not None else []
        arena = [self.arena.take()] if self.arena is not None else []
        return [*leaves, *pooled, *arena]

    @property
    def sources(self) -> str:
        """Every kernel's source, saying which compiler compiled it, and the entry's."""
        from . import direct
        refused = direct.refused()
        parts = []
        for i, (src, m, sig) in enumerate(zip(self.plan.kernel_sources, self.modules,
                                             self.plan.signatures)):
            if self.direct[i] is not None:
                by = "tracejit (codegen/direct)"
            else:
                why = refused.get((src, tuple(sig)))
                by = f"Numba ({why})" if why else "Numba"
            parts.append(f"# kernel k{i}: {m.__name__}, compiled by {by}\n{src}")
        return "\n".join(parts + [f"# entry\n{self.plan.source}"])


class _Compiled:
    """Generated modules, each compiled for one signature: by codegen/direct where it can,
    else by Numba; loaded from the disk cache if it is there, else compiled here and in
    worker processes at once (compile_workers.py)."""

    def __init__(self, sources: list, signatures: list, in_process_only: bool = False,
                 setup=None):
        """``setup()``: the program's once-per-process set-up, run while worker processes
        start if there are kernels to compile (compile_all's ``meanwhile``)."""
        from . import direct
        self.sources, self.signatures = sources, signatures
        if in_process_only:
            self.modules = [cache.loaded(src) for src in sources]
            if not _in_process(sources, self.modules, signatures):
                raise NotCached()
            self.direct = [direct.loaded(src, sig) for src, sig in zip(sources, signatures)]
        else:
            self.modules = [cache.load(src) for src in sources]
            self.direct = [None] * len(sources)
            with warnings.catch_warnings():
                # Advice about generated code (e.g. a BLAS call on a strided view) is ours
                # to act on, not the user's: benchmarks/profile_plan.py is where it shows.
                warnings.simplefilter("ignore", NumbaPerformanceWarning)
                self._compile_missing(sources, setup)
        numba = [k for k, d in enumerate(self.direct) if d is None]
        for k in numba:
            # Only the planned signature runs: other argument types (a read-only array)
            # raise TypeError instead of compiling the kernel again.
            self.modules[k].kernel.disable_compile()
        cache.seal([self.modules[k] for k in numba])

    def _direct(self, k: int, compile: bool):
        from . import direct
        mod, sig = self.modules[k], self.signatures[k]
        d = self.direct[k] = direct.build(self.sources[k], sig, mod.__dict__,
                                          cache.direct_folder(mod), cache.VERSION, compile)
        return d

    def _compile_missing(self, sources: list, setup=None):
        todo, here, again, seen = [], [], [], set()
        for k, (src, mod, sig) in enumerate(zip(sources, self.modules, self.signatures)):
            if (mod.__name__, sig) in seen:
                again.append(k)              # the same kernel twice: built once, below
                continue
            seen.add((mod.__name__, sig))
            kernel = mod.kernel
            if (self._direct(k, compile=False) is not None or sig in kernel.overloads
                    or load_cached(kernel, sig)):
                continue
            (todo if cache.shared_on_disk(mod) else here).append((src, k, sig))

        def compile_here(k, sig):
            if self._direct(k, compile=True) is None:
                self.modules[k].kernel.compile(sig)

        def load_compiled(k, sig):
            if self._direct(k, compile=False) is not None:
                return True
            mod = self.modules[k]
            return cache.verified(mod) and load_cached(mod.kernel, sig)

        compile_in_threads(deque(here), threading.Lock(), compile_here)
        compile_all(todo, compile_here, load_compiled, setup)
        for k in again:
            self._direct(k, compile=False)

    def callable(self, k: int):
        d = self.direct[k]
        return d.py if d is not None else self.modules[k].kernel

    def address(self, k: int) -> int | None:
        """The address of module ``k``'s C entry point (a direct kernel's, or the C wrapper
        of Numba's), for native code that calls it."""
        d = self.direct[k]
        if d is not None:
            return d.address
        return handoff.wrapper_address(self.modules[k].kernel, self.signatures[k])


def _trampolines(plan: Plan) -> dict:
    """The trampoline module's source of each parallel kernel the native hand-off can run
    (kernel index -> source); empty when the hand-off is off."""
    if not handoff.enabled():
        return {}
    sources = {k: handoff.trampoline_source(plan.signatures[k]) for k in plan.parallel}
    return {k: src for k, src in sources.items() if src is not None}


_background: list = []


def _in_background(work):
    thread = threading.Thread(target=work, daemon=True, name="tracejit-handoff")
    _background.append(thread)
    thread.start()


@atexit.register
def _wait_for_background():
    # A thread stopped inside LLVM while the interpreter shuts down can crash it.
    for thread in list(_background):
        thread.join()


def _prepare_handoff(plan: Plan, program, tramps: dict, runner):
    """Load or compile the native hand-off's modules (its runtime and the kernels'
    trampolines), then give ``runner`` a Job for each parallel kernel that has an int64 C
    wrapper. Any failure leaves the kernels on threads.py's pool."""
    helpers = dict(handoff.RUNTIME_SIGNATURES)
    helpers.update((src, handoff.TRAMPOLINE_SIGNATURE) for src in tramps.values())
    try:
        with cache.lock:
            compiled = _Compiled(list(helpers), list(helpers.values()))
        index = {src: k for k, src in enumerate(helpers)}
        native = handoff.native_pool
        native.serve = compiled.callable(index[handoff.SERVE_SOURCE])
        native.post = compiled.callable(index[handoff.POST_SOURCE])
        jobs = {}
        for k, src in tramps.items():
            sig, kernel = plan.signatures[k], program.kernels[k]
            fn = program._address(k)
            if fn is None:
                continue
            tramp = compiled.address(index[src])
            if tramp is not None:
                jobs[kernel] = handoff.Job(kernel, fn, tramp, sig)
        runner.jobs = jobs
    except Exception:                  # noqa: BLE001 (the pool still runs every kernel)
        pass
    finally:
        runner.ready.set()
        try:
            _background.remove(threading.current_thread())
        except ValueError:
            pass


def _entry(plan: Plan, program, runner):
    """The entry function, executed from its source with the kernels and constants as its
    globals (its source is registered with linecache, so tracebacks show its lines)."""
    namespace = {"np": np, "pool": runner, "ArgumentMismatch": ArgumentMismatch,
                 **plan.globals, **{f"k{i}": k for i, k in enumerate(program.kernels)}}
    for j in plan.addressed:                 # kernels a native loop calls by address
        address = program._address(j)
        if address is None:
            raise RuntimeError(f"kernel k{j} has no C wrapper to call by address")
        namespace[f"A{j}"] = address
    filename = f"<tracejit entry of {plan.fn.name} #{id(plan):x}>"
    source = plan.source
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace["entry"]


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
        # Two threads may run one program at once (its kernels release the GIL): between one
        # call's check and its list holding the buffers, another call must not take them too.
        self._lock = threading.Lock()

    def __call__(self) -> list:
        with self._lock:
            free = _references(self._unheld, 0)
            pool = self.pool
            for i, (shape, dtype) in enumerate(self.specs):
                if pool[i] is None or _references(pool, i) > free:
                    pool[i] = np.empty(shape, dtype)
            return list(pool)


def _references(items: list, i: int) -> int:
    """``sys.getrefcount`` of ``items[i]`` as seen from here (the pool's one code path)."""
    return sys.getrefcount(items[i])


def _in_process(sources: list, modules: list, signatures: list) -> bool:
    from . import direct
    return all(direct.loaded(src, sig) is not None
               or (m is not None and sig in m.kernel.overloads)
               for src, m, sig in zip(sources, modules, signatures))


class NotCached(Exception):
    """A kernel is not compiled in this process (Program(plan, in_process_only=True))."""


def compile_plan(plan: Plan | Fusion, in_process_only: bool = False) -> Program | None:
    """The program of a plan (or of a fusion's plan); with ``in_process_only``, None unless
    every kernel is compiled in this process already."""
    from .blas import resolve_blas
    from .blas_threads import single_threaded_blas
    plan = plan if isinstance(plan, Plan) else Plan(plan)
    if in_process_only and not _in_process(
            plan.kernel_sources, [cache.loaded(src) for src in plan.kernel_sources],
            plan.signatures):
        return None               # before the BLAS set-up: importing SciPy takes 0.2 s
    def blas_setup():
        # Once per process, before any program runs: programs split matmuls across their own
        # threads (threads.py), so BLAS runs one.
        with cache.lock:
            single_threaded_blas()
            resolve_blas()
    # (by the kernels' code, as a compile worker decides: a matmul inside a loop's or a
    # branch's body is a control group's, and without the set-up its kernel's first call
    # imported all of scipy.linalg for Numba's helper, on the caller's thread, holding the
    # import lock (a fork then left the child waiting for it), and SciPy's BLAS kept its
    # threads)
    has_matmul = any("gemm(" in src for src in plan.kernel_sources)
    try:
        return Program(plan, in_process_only, blas_setup if has_matmul else None)
    except NotCached:
        return None
