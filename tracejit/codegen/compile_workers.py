"""Compiling a program's kernels in several processes, and several threads, at once.

Numba compiles under one process-wide lock, and its typing and lowering (and codegen/direct's
lowering) are Python that holds the GIL: threads cannot lower two kernels at once, and a
compile thread shares the GIL with the NumPy tier running the user's steps. So a program with
several kernels to compile hands some of them to worker processes while the calling thread
compiles the others. A worker is a
fresh interpreter (``python -c _BOOT``, started with ``subprocess``: exec'd at once, so
nothing is forked from a process that runs BLAS or OpenMP threads; it imports only the code
generator) that loads the generated module from the kernel cache folder and compiles it: with
codegen/direct where it can (its machine code goes to the folder's ``direct``, checksummed),
else with Numba's ``cache=True``, sealing its files (cache.py); the parent then loads the
machine code from the disk cache, after checking its checksums, as a warm start would.

Starting a worker costs about a second (importing NumPy and Numba, Numba's first compile), the
time of three or four kernels, so workers start only for programs with at least
``MIN_KERNELS`` kernels to compile, and stay for later programs. They are used only with the
configured cache folder, writable (a private fallback folder belongs to this process alone),
and only when they run the same code generator (``cache.VERSION``). A worker that fails or
dies costs nothing but time: its kernels are compiled here, where an error in one is raised as
it would be without workers. ``TRACEJIT_COMPILE_WORKERS`` sets how many (default: the CPUs
this process may use, less one, at most 4, for a compile in the background; for one the caller
waits for, the CPUs its compile threads leave; 0 turns them off).

In this process, ``compile_in_threads`` compiles the kernels not sent to a worker in several
threads at once (``TRACEJIT_COMPILE_THREADS``): lowering is Python, one at a time, but LLVM
runs beside it.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import subprocess
import sys
import threading
import traceback
from collections import deque

from ..config import config
from .threads import default_threads

MIN_KERNELS = 4


def default_workers() -> int:
    return max(0, min(4, default_threads() - 1))


def worker_count(background: bool = False) -> int:
    """Workers for a compile: in the background (beside the user's steps, which a compile in
    this process would slow) the CPUs less one; in the foreground only the CPUs that this
    process's compile threads leave (compile_in_threads): on two cores, the MLP step's
    first call took 0.85-0.91 s with two threads and no worker, 0.98-1.18 s with one thread
    and a worker, 1.24-1.42 s with both."""
    n = config.compile_workers
    if n is not None:
        return max(0, n)
    if background:
        return default_workers()
    return max(0, min(4, default_threads() - compile_threads()))


class Worker:
    """One compile process: ``compile(source, sig)`` -> None, or the error it reported."""

    def __init__(self):
        from . import cache_folder
        self.root = str(cache_folder.root())      # the cache it compiles into, for good
        env = dict(os.environ, TRACEJIT_CACHE_DIR=self.root,
                   TRACEJIT_COMPILE_WORKERS="0",
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, package], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.version = None        # the worker's cache.VERSION, from its first message
        self.alive = True

    def hello(self) -> str | None:
        if self.version is None and self.alive:
            self.version = self._receive()
        return self.version

    def compile(self, source: str, sig: tuple):
        """None when the worker compiled it into the disk cache; else why not."""
        try:
            # the parent's choice of compiler (config.direct), which may change at run time
            pickle.dump((source, sig, config.direct), self.proc.stdin)
            self.proc.stdin.flush()
        except (OSError, ValueError) as e:
            self.alive = False
            return f"the worker is gone ({e})"
        return self._receive()

    def _receive(self):
        try:
            return pickle.load(self.proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError, ValueError) as e:
            self.alive = False
            return f"the worker is gone ({type(e).__name__})"

    def close(self):
        self.alive = False
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()             # the worker exits when its input ends
            except OSError:
                pass


class _Pool:
    """The worker processes of this process, started on first need and kept."""

    def __init__(self):
        self.workers: list[Worker] = []
        self.retired: list[Worker] = []
        self.lock = threading.Lock()
        self.busy = 0
        self.idle = threading.Condition(self.lock)
        self.closed = False
        self.compiled = 0          # kernels the workers compiled (tests, benchmarks)

    def take(self, n: int) -> list[Worker]:
        from . import cache_folder
        root = str(cache_folder.root())
        with self.lock:
            if self.closed:
                return []
            for w in self.workers:
                if w.root != root:            # config.cache_dir changed since it started
                    w.close()
            self.retired += [w for w in self.workers if not w.alive]   # waited for at exit
            self.workers = [w for w in self.workers if w.alive]
            while len(self.workers) < n:
                try:
                    self.workers.append(Worker())
                except OSError:           # no interpreter to start: compile here alone
                    break
            return self.workers[:n]

    def shutdown(self):
        # At exit: let the compiles in flight finish (a tiered program waiting for them at
        # exit would otherwise compile them again here), then end the workers.
        with self.lock:
            while self.busy:
                self.idle.wait()
            self.closed = True
            for w in self.workers:
                w.close()
            for w in self.workers + self.retired:
                w.proc.wait()            # no compile is in flight: it exits on end of input


_pool = _Pool()
atexit.register(_pool.shutdown)


def _new_pool_in_child():
    """A forked child must not talk to its parent's workers (their pipes are shared, so two
    processes' requests and answers would interleave) nor wait at exit for a compile that
    was in flight in a parent's thread: it starts workers of its own when it needs some."""
    global _pool
    atexit.unregister(_pool.shutdown)   # its lock may be held by a thread the child lacks
    _pool = _Pool()
    atexit.register(_pool.shutdown)


if hasattr(os, "register_at_fork"):            # POSIX only
    os.register_at_fork(after_in_child=_new_pool_in_child)


_thread = threading.local()


@contextlib.contextmanager
def in_background():
    """Compiles in this block (this thread) run beside the user's steps (driver/tiered.py):
    they go to the workers alone, and this thread only loads what they wrote. A compile here
    would share the GIL with the steps (the NumPy tier is Python between its ufuncs): on two
    cores, the MLP's first-tier steps took 14.1-14.6 ms while its kernels compiled here,
    9.1-10.1 ms while they compiled in the worker (NumPy eager 7.3-10.8 ms); compiling here
    only until the worker was ready still left the chain's and softmax's steps at 2x NumPy's
    (their few kernels were done by then). Without a usable worker they compile here after
    all."""
    saved = getattr(_thread, "background", False)
    _thread.background = True
    try:
        yield
    finally:
        _thread.background = saved


def compiled_by_workers() -> int:
    return _pool.compiled


def compile_all(items: list, compile_here, load_compiled, meanwhile=None) -> None:
    """Compile every ``(source, payload, sig)`` of ``items``: ``compile_here(payload, sig)``
    in this thread, or in a worker and then ``load_compiled(payload, sig)`` (False: compile
    here after all). ``meanwhile()``, if given, runs once here while the workers start (the
    parent's own set-up, such as importing SciPy's BLAS: 0.45 s that the workers' start
    would otherwise wait for)."""
    background = getattr(_thread, "background", False)
    n = worker_count(background) if len(items) >= MIN_KERNELS or (background and items) else 0
    workers = _pool.take(min(n, len(items) - (0 if background else 1))) if n else []
    if meanwhile is not None:
        meanwhile()
    queue, lock = deque(items), threading.Lock()
    if not workers:
        if background:           # beside the user's steps: one kernel at a time
            for _, payload, sig in items:
                compile_here(payload, sig)
        else:
            compile_in_threads(queue, lock, compile_here)
        return
    from . import cache
    remote = []

    def serve(worker: Worker):
        if worker.hello() != cache.VERSION:      # another code generator: of no use
            return
        while True:
            with lock:
                if not queue:
                    return
                item = queue.pop()               # from the far end: the caller takes the front
                with _pool.lock:
                    _pool.busy += 1
            try:
                error = worker.compile(item[0], item[2])
            finally:
                with _pool.lock:
                    _pool.busy -= 1
                    _pool.idle.notify_all()
            with lock:
                remote.append((item, error))
            if error is not None:
                return

    threads = [threading.Thread(target=serve, args=(w,), daemon=True,
                                name="tracejit-compile-proxy") for w in workers]
    for t in threads:
        t.start()
    try:
        # In the background this thread compiles nothing while a worker may (its kernels
        # are loaded below); in the foreground it compiles from the front of the list.
        if not background:
            compile_in_threads(queue, lock, compile_here)
    except BaseException:
        for t in threads:         # compile_in_threads emptied the queue: they stop soon
            t.join()
        raise
    for t in threads:
        t.join()
    for (_, payload, sig), error in remote:
        if error is None and load_compiled(payload, sig):
            _pool.compiled += 1
        else:
            compile_here(payload, sig)
    for _, payload, sig in queue:          # left by workers that failed or were of no use
        compile_here(payload, sig)


def compile_threads() -> int:
    n = config.compile_threads
    return max(1, min(4, default_threads()) if n is None else n)


def compile_in_threads(queue: deque, lock, compile_here) -> None:
    """``compile_here(payload, sig)`` for the items of ``queue``, taken from its front by this
    thread and ``compile_threads() - 1`` more. Lowering a kernel is Python, one at a time, but
    LLVM runs with the GIL released and outside llvmlite's lock (direct/llvm_unlocked.py): one
    thread lowers a kernel while others optimize and emit theirs. The RNN scan step's 16
    kernels took 0.79-1.04 s in one thread, 0.45-0.55 s in two (2 cores). The first error
    stops the rest and is raised here, as in a plain loop."""
    errors: list = []

    def run():
        while True:
            with lock:
                if errors or not queue:
                    return
                _, payload, sig = queue.popleft()
            try:
                compile_here(payload, sig)
            except BaseException as e:      # noqa: BLE001 (raised by the caller below)
                with lock:
                    errors.append(e)
                    queue.clear()
                return

    helpers = [threading.Thread(target=run, daemon=True, name="tracejit-compile")
               for _ in range(min(compile_threads(), len(queue)) - 1)]
    for t in helpers:
        t.start()
    run()
    for t in helpers:
        t.join()
    if errors:
        raise errors[0]


# A worker imports the code generator only: the packages ``tracejit`` and ``tracejit.codegen``
# are made without running their ``__init__`` (which import the tracer, autodiff, nn, ...), so
# it starts in 0.44 s instead of 0.84 s. Their submodules import as usual.
_BOOT = """
import sys, types
for name, path in (("tracejit", sys.argv[1]), ("tracejit.codegen", sys.argv[1] + "/codegen")):
    package = types.ModuleType(name)
    package.__path__ = [path]
    sys.modules[name] = package
from tracejit.codegen.compile_workers import _serve
_serve()
"""


def _serve():
    """The worker's loop: (source, sig, direct) in, None or an error message out, until input
    ends."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                  # stray prints must not corrupt the replies
    inp = sys.stdin.buffer
    from . import cache, direct
    from .blas import resolve_blas
    pickle.dump(cache.VERSION, out)
    out.flush()
    while True:
        try:
            source, sig, config.direct = pickle.load(inp)
        except EOFError:
            return
        try:
            if "gemm(" in source:
                resolve_blas()
            mod = cache.load(source)
            if not cache.shared_on_disk(mod):
                raise RuntimeError("the kernel cache folder cannot be written here")
            if direct.build(source, sig, mod.__dict__, cache.direct_folder(mod),
                            cache.VERSION) is None:
                mod.kernel.compile(sig)
                cache.seal([mod])
            reply = None
        except Exception:
            reply = traceback.format_exc(limit=4)
        pickle.dump(reply, out)
        out.flush()


if __name__ == "__main__":
    _serve()
