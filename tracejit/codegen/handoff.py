"""Running one kernel on blocks in several threads, handed over in native code.

threads.py's BlockPool hands blocks to sleeping Python threads: waking one and letting it take
the GIL to call the kernel cost 50-120 us per parallel kernel here, a tenth of a training step.
Here the whole hand-off runs without the GIL:

- Each worker thread sits in ``serve`` (a ``nogil`` Numba loop) and spins on a shared control
  array for about a millisecond after its last block, then returns to Python and sleeps on an
  Event until the next call wakes it. So workers spin only while a program is running calls
  back to back, and a machine kept busy by others loses at most that much per idle worker.
- The caller's ``post`` publishes a job (a seqlock: the sequence number is odd while the job's
  fields are written) and takes blocks itself. Blocks are claimed one at a time with a
  compare-and-swap below the job's end, from a ticket counter that only grows, so a worker
  that looks late never runs a block of the next job; the caller never waits for a block that
  nobody has claimed, only for claimed ones to finish.
- Kernels are called by the address of their C wrapper (native.py), through a trampoline per
  kernel signature that rebuilds the arrays from an int64 buffer of data pointers, shapes and
  scalar bits. The trampolines, ``serve`` and ``post`` are generated modules like the kernels:
  compiled once per signature into the disk cache (program.py compiles them with the kernels).
"""
from __future__ import annotations

import os
import textwrap
import threading

import numpy as np
from numba import types

from .threads import blocks, default_threads

# Slots of the control array.
SEQ, NEXT, DONE, TRAMP, BUF, FN, SPAN, NBLOCKS, BASE, FAILED = range(10)
# After its last block a worker spins: first with the CPU's pause hint (a hand-off within
# microseconds), then yielding its core to any other runnable thread (on a machine that others
# keep busy a spinning worker must not take their core), then it sleeps.
# Measured in one process, alternating (MLP step, medians of 12 x 60 steps): idle, 4.76 ms
# against 5.56 ms with threads.py's pool; with another process keeping one of the two cores
# busy, 8.95 against 8.94 ms, where spinning with pauses alone took 15.1 ms.
PAUSES = 2000           # pause instructions: about 50 us
YIELDS = 1000           # sched_yield calls: about 0.7 ms

_HEADER = """import numpy as np
from numba import njit, carray
from tracejit.codegen.native import (atomic_add, atomic_claim, atomic_load, atomic_store,
                                     bits_to_f64, call_address, pointer_to, spin_pause,
                                     yield_cpu)
from tracejit.codegen.mathlib import bits_to_f32
"""

# Runs the blocks of the published job below its end; shared by ``serve`` and ``post``.
_BLOCKS = f"""\
end = base + n
while True:
    t = atomic_load(ctrl, {NEXT})
    if t >= end:
        break
    if atomic_claim(ctrl, {NEXT}, t):
        b = t - base
        if call_address(tramp, (bufaddr, fn, b * span // n, (b + 1) * span // n)) != 0:
            atomic_store(ctrl, {FAILED}, 1)   # a kernel's exception: see NativePool.run
        atomic_add(ctrl, {DONE}, 1)
"""

SERVE_SOURCE = _HEADER + f"""

@njit(cache=True, nogil=True)
def kernel(ctrl, state, last, pauses, yields):
    spins = 0
    while True:
        seq = atomic_load(ctrl, {SEQ})
        if seq != last and seq % 2 == 0:
            tramp = atomic_load(ctrl, {TRAMP})
            bufaddr = atomic_load(ctrl, {BUF})
            fn = atomic_load(ctrl, {FN})
            span = atomic_load(ctrl, {SPAN})
            n = atomic_load(ctrl, {NBLOCKS})
            base = atomic_load(ctrl, {BASE})
            if atomic_load(ctrl, {SEQ}) != seq:
                continue                      # a job was being published: read it again
            last = seq
""" + textwrap.indent(_BLOCKS, " " * 12) + f"""\
            spins = 0
        elif spins < pauses:
            spins += 1
            spin_pause()
        elif spins < pauses + yields:
            spins += 1
            yield_cpu()
        else:
            atomic_store(state, 0, 1)         # going to sleep: the next post wakes us
            if atomic_load(ctrl, {SEQ}) == last:
                return last
            atomic_store(state, 0, 0)
            spins = 0
# kernel(array(int64, 1d, C), array(int64, 1d, C), int64, int64, int64)
"""

POST_SOURCE = _HEADER + f"""

@njit(cache=True, nogil=True)
def kernel(ctrl, buf, tramp, fn, span, n):
    bufaddr = buf.ctypes.data
    atomic_add(ctrl, {SEQ}, 1)                # odd: the job's fields are being written
    base = atomic_load(ctrl, {NEXT})
    atomic_store(ctrl, {TRAMP}, tramp)
    atomic_store(ctrl, {BUF}, bufaddr)
    atomic_store(ctrl, {FN}, fn)
    atomic_store(ctrl, {SPAN}, span)
    atomic_store(ctrl, {NBLOCKS}, n)
    atomic_store(ctrl, {BASE}, base)
    atomic_add(ctrl, {SEQ}, 1)                # even: published
""" + textwrap.indent(_BLOCKS, " " * 4) + f"""\
    waited = 0
    while atomic_load(ctrl, {DONE}) < end:
        if waited < {PAUSES}:
            waited += 1
            spin_pause()
        else:
            yield_cpu()
    return 0
# kernel(array(int64, 1d, C), array(int64, 1d, C), int64, int64, int64, int64)
"""

RUNTIME_SIGNATURES = {
    SERVE_SOURCE: (types.int64[::1], types.int64[::1], types.int64, types.int64, types.int64),
    POST_SOURCE: (types.int64[::1], types.int64[::1]) + (types.int64,) * 4,
}
TRAMPOLINE_SIGNATURE = (types.int64,) * 4

_SCALARS = {"float32": "bits_to_f32(np.int32({}))", "float64": "bits_to_f64({})",
            "bool": "{} != 0"}


def _layout(sig: tuple):
    """How each kernel argument sits in the buffer: ("array", ndim) or ("scalar", name); None
    if some argument cannot (then the kernel runs on threads.py's pool)."""
    out = []
    for t in sig[:-2]:                   # the last two are lo, hi
        if isinstance(t, types.Array) and t.layout == "C":
            out.append(("array", t.ndim, str(t.dtype)))
        elif isinstance(t, (types.Integer, types.Float, types.Boolean)):
            out.append(("scalar", 1, str(t)))
        else:
            return None
    return out


def trampoline_source(sig: tuple) -> str | None:
    """The module whose ``kernel(bufaddr, fn, lo, hi)`` calls the kernel at ``fn`` with its
    arguments rebuilt from the buffer; None if the signature has an argument it cannot hold."""
    layout = _layout(sig)
    if layout is None:
        return None
    size = sum(1 + n if kind == "array" else 1 for kind, n, _ in layout)
    lines, names, i = [f"    b = carray(pointer_to(bufaddr, np.int64(0)), ({size},))"], [], 0
    for k, (kind, n, dtype) in enumerate(layout):
        name = f"x{k}"
        if kind == "array":
            example = "np.bool_(0)" if dtype == "bool" else f"np.{dtype}(0)"
            shape = "".join(f"b[{i + 1 + d}], " for d in range(n)).rstrip(" ")
            lines.append(f"    {name} = carray(pointer_to(b[{i}], {example}), ({shape}))")
            i += 1 + n
        else:
            expr = _SCALARS.get(dtype, f"np.{dtype}({{}})").format(f"b[{i}]")
            lines.append(f"    {name} = {expr}")
            i += 1
        names.append(name)
    args = ", ".join(names + ["lo", "hi"])
    return (_HEADER + "\n\n@njit(cache=True, nogil=True)\ndef kernel(bufaddr, fn, lo, hi):\n"
            + "\n".join(lines) + f"\n    return call_address(fn, ({args}))\n"
            + "# kernel(int64, int64, int64, int64)\n")


def wrapper_address(dispatcher, sig: tuple) -> int | None:
    """The address of the C wrapper of ``dispatcher``'s compiled ``sig``, if it returns int64."""
    cres = dispatcher.overloads.get(tuple(sig))
    returns = None if cres is None else cres.signature.return_type
    if getattr(returns, "literal_type", returns) != types.int64:     # kernels return 0
        return None
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_cfunc_wrapper_name)


class Job:
    """One kernel's native calls: its address, its trampoline's, and how to fill the buffer."""

    def __init__(self, kernel, fn: int, tramp: int, sig: tuple):
        self.kernel, self.fn, self.tramp = kernel, fn, tramp
        self.layout = _layout(sig)

    def buffer(self, args) -> np.ndarray:
        vals = []
        for (kind, _, dtype), a in zip(self.layout, args):
            if kind == "array":
                vals.append(a.ctypes.data)
                vals.extend(a.shape)
            elif dtype == "float32":
                vals.append(int(np.float32(a).view(np.int32)))
            elif dtype == "float64":
                vals.append(int(np.float64(a).view(np.int64)))
            elif dtype == "uint64":         # its bits: the trampoline's np.uint64 gives them back
                vals.append(int(np.uint64(a).view(np.int64)))
            else:
                vals.append(int(a))
        return np.array(vals, np.int64)


def enabled() -> bool:
    """TRACEJIT_NATIVE_HANDOFF=0 runs parallel kernels on threads.py's pool instead, as does
    Windows (the workers' spin-wait calls POSIX ``sched_yield``)."""
    return os.name == "posix" and os.environ.get("TRACEJIT_NATIVE_HANDOFF", "1").strip() not in (
        "0", "false", "no")


class NativePool:
    """``run(job, args, span, min_block)``: the job's kernel over blocks of ``range(span)`` on
    this thread and up to ``threads - 1`` workers (started on first use)."""

    def __init__(self, threads: int):
        self.threads = threads
        self.ctrl = np.zeros(16, np.int64)
        self.workers: list = []            # (state array, Event)
        self._lock = threading.Lock()
        self.serve = self.post = None      # the runtime's dispatchers (program.py sets them)

    def _start(self):
        while len(self.workers) < self.threads - 1:
            state, wake = np.zeros(1, np.int64), threading.Event()
            self.workers.append((state, wake))
            threading.Thread(target=self._work, args=(state, wake), daemon=True,
                             name=f"tracejit-native-{len(self.workers)}").start()

    def _work(self, state, wake):
        last = int(self.ctrl[SEQ])
        while True:
            last = self.serve(self.ctrl, state, last, PAUSES, YIELDS)
            wake.wait()
            wake.clear()

    def run(self, job: Job, args: tuple, span: int, min_block: int = 1):
        n, chunks = blocks(self.threads, span, min_block)
        # One parallel call at a time: a call from another thread meanwhile runs serially.
        if n <= 1 or not self._lock.acquire(blocking=False):
            job.kernel(*args, 0, span)
            return
        try:
            self._start()
            for state, wake in self.workers[:n - 1]:
                if state[0]:
                    state[0] = 0
                    wake.set()
            buf = job.buffer(args)           # alive until every block is done
            self.post(self.ctrl, buf, job.tramp, job.fn, span, chunks)
            if self.ctrl[FAILED]:
                # A block returned a nonzero status (codegen/direct's kernels return the code
                # of the exception they raise): run the kernel again from Python, which
                # raises it with its message.
                self.ctrl[FAILED] = 0
                job.kernel(*args, 0, span)
        finally:
            self._lock.release()


native_pool = NativePool(default_threads())


class Runner:
    """The entry's ``pool``: native hand-off for the kernels that have a Job, threads.py's
    pool for the others."""

    def __init__(self, jobs: dict, fallback):
        self.jobs, self.fallback = jobs, fallback
        self.ready = threading.Event()     # set once the jobs are final (program.py)

    def run(self, kernel, args: tuple, span: int, min_block: int = 1):
        job = self.jobs.get(kernel)
        if job is None:
            self.fallback.run(kernel, args, span, min_block)
        else:
            native_pool.run(job, args, span, min_block)
