"""Running one kernel on blocks of its range in several threads at once.

Every kernel is a ``nogil`` function over a block ``lo:hi`` of one dim (kernel.py), so the
program can split a large call into one block per thread: the calling thread runs the first
block and the pool's threads the others, then the caller waits for them. Numba's ``prange``
would do the same inside one compiled function, but every ``prange`` costs an outlined
function, its wrappers and Numba's parallel passes at compile time (1.6-3 s a kernel here,
against 0.25 s for a serial one). The pool's threads sleep on a queue between calls, so they
never spin against another process for a core (OpenMP's spinning workers made a training step
4x slower when another process kept one of two cores busy).

Programs hand their parallel kernels over in native code (handoff.py), which avoids this
pool's wake-up and GIL hand-off; this pool runs the kernels whose arguments a trampoline cannot
hold, and all of them with TRACEJIT_NATIVE_HANDOFF=0.
"""
from __future__ import annotations

import itertools
import os
import queue
import threading
import time


def default_threads() -> int:
    """TRACEJIT_NUM_THREADS, else NUMBA_NUM_THREADS, else the CPUs this process may use."""
    for var in ("TRACEJIT_NUM_THREADS", "NUMBA_NUM_THREADS"):
        v = os.environ.get(var, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # not on Linux
        return os.cpu_count() or 1


CHUNKS_PER_THREAD = 1     # blocks per thread (more cut GEMMs too small: 1 measured best)


def blocks(threads: int, span: int, min_block: int) -> tuple[int, int]:
    """(threads to use, blocks to cut ``range(span)`` into): each block at least
    ``min_block`` long (shared by this pool and handoff.py's)."""
    most = max(1, span // max(min_block, 1))
    n = min(threads, most)
    return n, min(most, n * CHUNKS_PER_THREAD)
SPIN_SECONDS = 100e-6     # how long the caller polls for the last blocks before it sleeps


class _Job:
    """One kernel call split into blocks, which the caller and the workers take in turn."""

    def __init__(self, kernel, args, bounds):
        self.kernel, self.args, self.bounds = kernel, args, bounds
        self.next = itertools.count()      # next() is atomic: each block is taken once
        self.done = []                     # list.append is atomic: one entry per block
        self.errors = []
        self.finished = threading.Event()

    def work(self):
        n = len(self.bounds)
        for i in self.next:
            if i >= n:
                return
            lo, hi = self.bounds[i]
            try:
                self.kernel(*self.args, lo, hi)
            except BaseException as e:      # raised by the caller
                self.errors.append(e)
            self.done.append(i)
            if len(self.done) == n:
                self.finished.set()


class BlockPool:
    """``pool.run(kernel, args, span, min_block)``: ``kernel(*args, lo, hi)`` over blocks of
    ``range(span)``, each at least ``min_block`` long, on up to ``threads`` threads.

    The range is cut into a few blocks per thread, which the caller and the workers take in
    turn: waking a sleeping worker takes tens of microseconds here, and meanwhile the caller
    is already computing; whoever is free takes the next block. The caller then polls briefly
    for the blocks still running (``time.sleep(0)`` lets the GIL go) and sleeps after
    SPIN_SECONDS, so a busy machine costs no spinning core for long."""

    def __init__(self, threads: int):
        self.threads = threads
        self._workers: list = []
        self._lock = threading.Lock()

    def _start(self):
        while len(self._workers) < self.threads - 1:
            q = queue.SimpleQueue()
            threading.Thread(target=_work, args=(q,), daemon=True,
                             name=f"tracejit-block-{len(self._workers)}").start()
            self._workers.append(q)

    def run(self, kernel, args: tuple, span: int, min_block: int = 1):
        n, chunks = blocks(self.threads, span, min_block)
        # One parallel call at a time: a call from another thread meanwhile runs serially.
        if n <= 1 or not self._lock.acquire(blocking=False):
            kernel(*args, 0, span)
            return
        try:
            self._start()
            job = _Job(kernel, args, [(c * span // chunks, (c + 1) * span // chunks)
                                      for c in range(chunks)])
            for q in self._workers[:n - 1]:
                q.put(job)
            job.work()
            deadline = time.perf_counter() + SPIN_SECONDS
            while len(job.done) < chunks and time.perf_counter() < deadline:
                os.sched_yield()      # lets the GIL go, and the CPU to a worker woken here
            job.finished.wait()
            # every block is done: a worker still returning from work() must not keep the
            # arguments (a program reuses a result buffer only when nobody else holds it)
            job.args = None
            if job.errors:
                raise job.errors[0]
        finally:
            self._lock.release()


def _work(q: queue.SimpleQueue):
    # Workers sleep on their queue between calls. Polling for the next call (time.sleep(0)
    # for 300 us) halved the hand-off of an empty kernel (44 -> 25 us) but made a training
    # step slower: the polling worker takes the GIL from the caller's Python between kernels.
    while True:
        job = q.get()
        job.work()
        # Hold nothing between calls: a program reuses a result buffer only when nobody
        # else refers to it (plan.POOL_MIN).
        del job


pool = BlockPool(default_threads())
