"""Tiered execution: a new program answers at once on NumPy while its kernels compile.

Compiling a program's kernels takes seconds; running its optimized IR on NumPy takes
milliseconds. A ``TieredProgram`` runs calls on the NumPy tier (``codegen/numpy_tier.py``)
until a background thread has built a compiled stage, then later calls run that: a switch
happens between calls, never inside one. The stages (backend.py, pipeline.py): "mixed" first
where it saves most of the compile (the large groups' kernels, small groups on NumPy), then
"compiled".

The background thread starts after the first call has returned, so that loading SciPy, Numba
and the kernels does not take the GIL from it. It compiles with worker processes beside it
(codegen/compile_workers.py); a thread, because LLVM's passes run with the GIL released and
the thread needs no second interpreter to load the result. If a stage fails, the program keeps
running on the last stage that works and the error is reported once. A NumPy tier that runs
many ops a call (a loop: ``WAIT_OPS``) answers the first call only: the compile then runs
alone, as an untiered one, and the next calls wait for it.
"""
from __future__ import annotations

import atexit
import collections
import contextlib
import os
import sys
import threading
import time
import warnings
import weakref

from ..codegen.blas_threads import one_core_for_compiling
from ..codegen.compile_workers import in_background
from ..config import config


class CompileWarning(UserWarning):
    """A background compile failed; the function keeps running on the NumPy tier."""


_pending: "weakref.WeakSet" = weakref.WeakSet()


class _Compiles:
    """The background compiles, one at a time in one thread, in the order programs asked:
    a thread each piled up where every step traced again (a global changed each step: 157
    threads at once, each holding its program), and they shared the same cores anyway. A
    program jit dropped meanwhile (``cancel``) is skipped."""

    def __init__(self):
        self._queue: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._busy = threading.Lock()      # held while a compile runs (a fork waits on it)
        self._thread = None
        self._pid = os.getpid()

    def submit(self, program, stages):
        with self._cond:
            if self._pid != os.getpid():       # a forked child: the parent's thread is not here
                self.in_child()
            self._queue.append((program, stages))
            if self._thread is None:
                # (recorded once started: a KeyboardInterrupt between the two left a thread
                # recorded that never ran, and every later compile queued for good)
                thread = threading.Thread(target=self._run, daemon=True,
                                          name="tracejit-compile")
                thread.start()
                self._thread = thread
            self._cond.notify()

    def _run(self):
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                program, stages = self._queue.popleft()
            with self._busy:
                try:
                    program._compile(stages)
                except BaseException:    # noqa: BLE001 (reported by _compile; see there)
                    pass

    def in_child(self):
        """After a fork: the child has no compile thread, and the parent's locks may be held
        (the thread waiting on the condition held its lock now and then)."""
        self._queue, self._thread, self._pid = collections.deque(), None, os.getpid()
        self._busy = threading.Lock()
        self._cond = threading.Condition()

    def drain(self):
        """Forget the compiles not started (at exit: nothing will use them)."""
        with self._cond:
            queued, self._queue = list(self._queue), collections.deque()
        for program, _ in queued:
            program._skip()


_compiles = _Compiles()


@atexit.register
def _wait_for_compiles():
    # A thread stopped inside LLVM while the interpreter shuts down can crash it: let the
    # compile in flight finish first (those not started are dropped).
    _compiles.drain()
    for program in list(_pending):
        program._done.wait()


def _orphaned_in_child():
    """A forked child has no compile thread: a compile that was in flight will never finish
    there, so it stays on the NumPy tier, and neither exit nor ``wait()`` waits for it."""
    global _compiling, _saved_interval, _interval_lock
    for program in list(_pending):
        program._stages = None
        program._done.set()
    _pending.clear()
    _compiles.in_child()
    _forking.held = False
    _compiling, _saved_interval, _interval_lock = 0, None, threading.Lock()


def _before_fork():
    # A fork waits for the compile in flight, and no other starts until it is done: the child
    # would inherit its half-done imports and the locks it holds (Numba's compiler lock), and
    # hang or fail on its own first compile. The compile thread that forks (none does) must
    # not wait for itself.
    if threading.current_thread().name != "tracejit-compile":
        _compiles._busy.acquire()
        _forking.held = True


def _after_fork_in_parent():
    if getattr(_forking, "held", False):
        _forking.held = False
        _compiles._busy.release()


_forking = threading.local()

if hasattr(os, "register_at_fork"):            # POSIX only
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_orphaned_in_child)


# While a compile runs in the background, Python's GIL switch interval is made short. Numba's
# typing and lowering are Python and hold the GIL; the NumPy tier drops and takes it again
# around every ufunc and BLAS call, and waited up to the default 5 ms each time it asked.
_SWITCH_INTERVAL = 0.0002
_compiling = 0
_saved_interval = None
_interval_lock = threading.Lock()


def _shorter_gil_slices(delta: int):
    global _compiling, _saved_interval
    with _interval_lock:
        if delta > 0 and _compiling == 0:
            _saved_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_interval, _SWITCH_INTERVAL))
        _compiling += delta
        if delta < 0 and _compiling == 0 and _saved_interval is not None:
            sys.setswitchinterval(_saved_interval)


# How many ops one call of the NumPy tier runs (NumpyProgram.op_runs: a loop's body once per
# step) decides how a tiered program waits for its compile:
# - at least WAIT_OPS: the first call answers on the NumPy tier, and the next ones wait for the
#   compile, which runs as an untiered one does (threads in this process, every core) rather
#   than beside the steps. Such a step is a Python loop over small ops, GIL-bound: beside it the
#   compile (in a worker that took 0.9 s to start, then one kernel at a time on the core left)
#   took 2.0 s instead of 0.65 s alone (the RNN training step of benchmarks/control_flow.py,
#   a scan of 100 steps: 2139 ops a call; 14 steps of 0.1 s ran meanwhile, 60 ms compiled):
#   compiled tier in use 1.1 s from the first call (untiered: 1.0 s), not 2.6-5.7 s. In-process
#   threads beside the steps were slower still (2.4-2.6 s). The MLP step (121 ops) runs beside
#   its compile, as does the CNN step (357).
# - at least COMPILE_AT_ONCE_OPS: no NumPy tier, the first call compiles (backend.py): at about
#   10 us of Python an op, its first call alone would take longer than the compile.
WAIT_OPS = 1000
COMPILE_AT_ONCE_OPS = 100_000


class TieredProgram:
    """``program(leaves)``: the latest compiled stage once built, the NumPy tier until then.

    ``stages`` is a list of ``(tier name, build)``, built in order in one background thread:
    "mixed" (the large groups' kernels, small groups on NumPy; pipeline.py) when it saves most
    of the compile, then "compiled" (every kernel). Each switch happens between calls.

    With ``waits`` (a NumPy tier costly to run beside the compile: WAIT_OPS), only the first
    call runs on the NumPy tier; the compile then runs alone, as an untiered one does, and the
    next calls wait for it (on the NumPy tier again only if it failed)."""

    def __init__(self, name: str, first, stages: list, waits: bool = False):
        self.name = name
        self.first = first
        self.waits = waits
        self.compiled = None
        self.tier = "numpy"
        self.error: BaseException | None = None
        self.compile_seconds: float | None = None     # until the last stage is in use
        self.stage_seconds: dict = {}                  # tier name -> seconds until in use
        self.calls = {"numpy": 0, **{tier: 0 for tier, _ in stages}}
        self._final = stages[-1][0]
        self._done = threading.Event()
        self._stages = stages
        self._started = threading.Lock()
        self._cancelled = False

    def cancel(self):
        """Build no more stages (jit dropped this program: a global it read changed); a stage
        being built is finished, and calls already holding the program still run."""
        self._cancelled = True
        if self._stages is not None and self._started.acquire(blocking=False):
            self._stages = None            # never started: nothing is left to build
            self._done.set()

    def _start(self):
        # After the first call: the background work (loading SciPy, Numba, the kernels) would
        # otherwise take the GIL from the first call (warm MLP step: 0.08 against 0.2 s).
        if self._cancelled:
            return
        if self._stages is not None and self._started.acquire(blocking=False):
            stages, self._stages = self._stages, None
            try:
                _pending.add(self)
                _compiles.submit(self, stages)
            except BaseException:
                # Interrupted before the compile was handed over (a KeyboardInterrupt as the
                # first call ends): no later call starts it again, and a waiting program's
                # calls (and exit) waited for it for good. It stays on the NumPy tier.
                self._skip()
                raise

    def _skip(self):
        """Not compiled after all (dropped before its turn, or at exit)."""
        self._done.set()
        _pending.discard(self)

    def _compile(self, stages):
        if self._cancelled:
            return self._skip()
        start = time.perf_counter()
        beside = not self.waits          # the NumPy tier's steps run beside this compile
        try:
            # (an error setting up or leaving the compile is reported as a stage's is: raised,
            # it ended the one compile thread, and every later program's compile with it; a
            # program waiting for its compile, and exit, waited for good)
            with contextlib.ExitStack() as stack:
                if beside:
                    _shorter_gil_slices(+1)
                    stack.callback(_shorter_gil_slices, -1)
                    stack.enter_context(in_background())
                    stack.enter_context(one_core_for_compiling())
                self._build(stages, start)
        except BaseException as e:       # noqa: BLE001 (never raised into a user's call)
            self._failed(e)
        finally:
            self.compile_seconds = time.perf_counter() - start
            self._done.set()
            _pending.discard(self)
            if "tiers" in config.dump:
                print(f"== tiers @{self.name} ==\n{self.describe()}", file=sys.stderr)

    def _build(self, stages, start: float):
        for tier, build in stages:
            if self._cancelled:
                break
            try:
                program = build()
            except BaseException as e:     # reported, never raised into a user's call
                self._failed(e)
                continue
            self.compiled, self.tier = program, tier
            self.stage_seconds[tier] = time.perf_counter() - start

    def _failed(self, e: BaseException):
        first, self.error = self.error is None, e
        if first:
            message = (f"tracejit: compiling {self.name} failed ({type(e).__name__}: {e}); "
                       "it keeps running on the NumPy tier, correct but slower. Please "
                       "report it with the output of jit(f).lower(*args).")
            try:
                warnings.warn(message, CompileWarning, stacklevel=1)
            except Exception:    # noqa: BLE001
                # A filter turning warnings into errors (pytest's filterwarnings = error) made
                # it an exception in this background thread: raised here it killed the thread
                # before the error was recorded and the later stages were built. It cannot be
                # raised into a user's call either; it is printed instead.
                print(f"{CompileWarning.__name__}: {message}", file=sys.stderr)

    def __call__(self, leaves):
        compiled = self.compiled
        if compiled is None and self.waits and self.calls["numpy"]:
            self._start()                  # (started already, unless the first call raised)
            self._done.wait()
            compiled = self.compiled
        if compiled is not None:
            self.calls[self.tier] += 1
            return compiled(leaves)
        self.calls["numpy"] += 1
        try:
            return self.first(leaves)
        finally:
            self._start()

    @property
    def guarded(self):
        """The last stage's unchecked call, once it runs (jit's fast path keeps it, so the
        stages before it are called through ``__call__``)."""
        # (the tier first: _build sets compiled, then tier, so a tier that is final here
        # means compiled is the final stage's, never the mixed one caught between the two)
        final = self.tier == self._final
        compiled = self.compiled
        return compiled.guarded if final and compiled is not None else None

    def wait(self):
        """Wait for every stage; the compiled program, or None if it failed."""
        self._start()
        self._done.wait()
        if self.tier != self._final:
            return None
        self.compiled.wait()           # its background work too (Executable.wait)
        return self.compiled

    # What ``jit(f).lower(...)`` shows: the compiled program's stages, once it exists.
    @property
    def optimized(self) -> str:
        compiled = self.wait()
        if compiled is None:
            return f"# the compile failed: {self.error!r}\n{self.first.function}"
        return compiled.optimized

    @property
    def source(self) -> str:
        compiled = self.wait()
        return f"# the compile failed: {self.error!r}" if compiled is None else compiled.source

    def describe(self) -> str:
        stages = ", ".join(f"{t} in use after {sec:.2f} s" for t, sec in self.stage_seconds.items())
        took = ("compiling" if self.compile_seconds is None
                else f"compile failed after {self.compile_seconds:.2f} s"
                if self.tier != self._final else "compiled")
        calls = ", ".join(f"{t}: {n}" for t, n in self.calls.items() if t != "numpy")
        return (f"{took}{'; ' + stages if stages else ''}; calls on the NumPy tier: "
                f"{self.calls['numpy']}, {calls}")
