"""Tiered execution: a new program answers at once on NumPy while its kernels compile.

Compiling a program's kernels takes seconds; running its optimized IR on NumPy takes
milliseconds. A ``TieredProgram`` runs calls on the NumPy tier (``codegen/numpy_tier.py``)
until a background thread has built the compiled program, then every later call runs the
compiled one: the switch happens between calls, never inside one. Why a thread and not a
worker process: LLVM's optimization and machine-code passes, most of a compile, run in
llvmlite's C library with the GIL released, so a thread overlaps them with the NumPy tier
(whose BLAS calls and large ufuncs release the GIL too) without starting a second Python with
NumPy and Numba imported (about a second here), and without fork after OpenMP or BLAS threads
exist. If the compile fails, the program keeps running on NumPy and the error is reported once.
"""
from __future__ import annotations

import atexit
import sys
import threading
import time
import warnings
import weakref

from .config import config


class CompileWarning(UserWarning):
    """A background compile failed; the function keeps running on the NumPy tier."""


_pending: "weakref.WeakSet" = weakref.WeakSet()


@atexit.register
def _wait_for_compiles():
    # A thread stopped inside LLVM while the interpreter shuts down can crash it: let each
    # compile in flight finish first.
    for program in list(_pending):
        program.wait()


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


class TieredProgram:
    """``program(leaves)``: the compiled program once built, the NumPy tier until then."""

    def __init__(self, name: str, first, build):
        self.name = name
        self.first = first
        self.compiled = None
        self.error: BaseException | None = None
        self.compile_seconds: float | None = None
        self.calls = {"numpy": 0, "compiled": 0}
        self._done = threading.Event()
        _pending.add(self)
        threading.Thread(target=self._compile, args=(build,), daemon=True,
                         name=f"tracejit-compile-{name}").start()

    def _compile(self, build):
        start = time.perf_counter()
        _shorter_gil_slices(+1)
        try:
            self.compiled = build()
        except BaseException as e:     # reported, never raised into a user's call
            self.error = e
            warnings.warn(f"tracejit: compiling {self.name} failed ({type(e).__name__}: {e}); "
                          "it keeps running on the NumPy tier, correct but slower. Please "
                          "report it with the output of jit(f).lower(*args).",
                          CompileWarning, stacklevel=1)
        finally:
            _shorter_gil_slices(-1)
            self.compile_seconds = time.perf_counter() - start
            self._done.set()
            _pending.discard(self)
            if "tiers" in config.dump:
                print(f"== tiers @{self.name} ==\n{self.describe()}", file=sys.stderr)

    def __call__(self, leaves):
        compiled = self.compiled
        if compiled is not None:
            self.calls["compiled"] += 1
            return compiled(leaves)
        self.calls["numpy"] += 1
        return self.first(leaves)

    @property
    def guarded(self):
        """The compiled program's unchecked call, once there is one (jit's fast path)."""
        compiled = self.compiled
        return None if compiled is None else compiled.guarded

    def wait(self):
        """Wait for the compile; the compiled program, or None if it failed."""
        self._done.wait()
        return self.compiled

    @property
    def tier(self) -> str:
        return "compiled" if self.compiled is not None else "numpy"

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
        took = ("compiling" if self.compile_seconds is None
                else f"compiled in {self.compile_seconds:.2f} s" if self.compiled is not None
                else f"compile failed after {self.compile_seconds:.2f} s")
        return (f"{took}; calls on the NumPy tier: {self.calls['numpy']}, compiled: "
                f"{self.calls['compiled']}")
