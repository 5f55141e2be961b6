"""Running one kernel on blocks of its range in several threads at once.

Every kernel is a ``nogil`` function over a block ``lo:hi`` of one dim (kernel.py), so the
program can split a large call into one block per thread: the calling thread runs the first
block and the pool's threads the others, then the caller waits for them. Numba's ``prange``
would do the same inside one compiled function, but every ``prange`` costs an outlined
function, its wrappers and Numba's parallel passes at compile time (1.6-3 s a kernel here,
against 0.25 s for a serial one). The pool's threads sleep on a queue between calls, so they
never spin against another process for a core (OpenMP's spinning workers made a training step
4x slower when another process kept one of two cores busy).
"""
from __future__ import annotations

import os
import queue
import threading


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


class BlockPool:
    """``pool.run(kernel, args, span, min_block)``: ``kernel(*args, lo, hi)`` over blocks of
    ``range(span)``, each at least ``min_block`` long, on up to ``threads`` threads."""

    def __init__(self, threads: int):
        self.threads = threads
        self._workers: list = []
        self._lock = threading.Lock()
        self._busy = False

    def _start(self):
        while len(self._workers) < self.threads - 1:
            q = queue.SimpleQueue()
            threading.Thread(target=_work, args=(q,), daemon=True,
                             name=f"tracejit-block-{len(self._workers)}").start()
            self._workers.append(q)

    def run(self, kernel, args: tuple, span: int, min_block: int = 1):
        n = min(self.threads, max(1, span // max(min_block, 1)))
        # One parallel call at a time: a call from another thread meanwhile runs serially.
        if n <= 1 or not self._lock.acquire(blocking=False):
            kernel(*args, 0, span)
            return
        try:
            self._start()
            done = queue.SimpleQueue()
            for t in range(1, n):
                self._workers[t - 1].put((kernel, args, t * span // n, (t + 1) * span // n,
                                          done))
            error = None
            try:
                kernel(*args, 0, span // n)
            except BaseException as e:
                error = e
            for _ in range(n - 1):
                e = done.get()
                error = error or e
            if error is not None:
                raise error
        finally:
            self._lock.release()


def _work(q: queue.SimpleQueue):
    while True:
        kernel, args, lo, hi, done = q.get()
        error = None
        try:
            kernel(*args, lo, hi)
        except BaseException as e:       # handed to the caller, who raises it
            error = e
        # Hold nothing between calls: a program reuses a result buffer only when nobody
        # else refers to it (plan.POOL_MIN).
        del kernel, args
        done.put(error)
        del error


pool = BlockPool(default_threads())
