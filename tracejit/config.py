"""Settings, read from the environment when tracejit is imported and changeable at run time.

TRACEJIT_DISABLE_JIT=1        run jitted functions eagerly (to step through them in a debugger)
TRACEJIT_EXPLAIN_RETRACE=1    say which argument changed, and how, each time a function retraces
TRACEJIT_DUMP=ir,passes,optimized,source,tiers   print these as each function is compiled
                              (tiers: when the compiled tier is ready, and after how many
                              NumPy-tier calls; passes: a line per pass as it runs, saying
                              what it changed; passes+ir: and the IR after each pass that
                              changed it. ir/passes/pass_log.py)
TRACEJIT_CACHE_DIR=path       where compiled kernels are cached on disk
TRACEJIT_RETRACE_WARN=8       warn once when a function has been traced this many times
TRACEJIT_BACKEND=numba        the default backend of jit: numba, numpy (the first tier alone), or
                              interpreter (the reference)
TRACEJIT_NUMPY_GROUP_MAX=0   loop groups of at most this many elements run on NumPy instead of
                              compiling a kernel (faster compiles, slower steps: codegen/plan.py)
TRACEJIT_COMPILE_WORKERS=n   processes that compile kernels beside the calling thread (default:
                              in the background the CPUs less one, else those the compile
                              threads leave; at most 4; 0: none. codegen/compile_workers.py)
TRACEJIT_COMPILE_THREADS=n   threads of this process that compile a program's kernels at once
                              (default: the CPUs, at most 4; 1: one at a time)
TRACEJIT_NATIVE_HANDOFF=1    parallel kernels handed to worker threads in native code (0: through
                              Python threads, codegen/threads.py)
TRACEJIT_TIERED=1             first calls run on NumPy while kernels compile in the background;
                              0 waits for the compiled kernels before the first call returns
TRACEJIT_DIRECT=1             kernels compiled straight to LLVM by tracejit (codegen/direct); 0:
                              every kernel through Numba's compiler, as before
TRACEJIT_F16C=1               float16 kernels convert with the CPU's F16C instructions where it
                              has them; 0: with tracejit's own routines (codegen/half.py)
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field


class ConfigWarning(UserWarning):
    """A TRACEJIT_* environment variable holds a value tracejit does not understand: it says
    which, and uses the default instead."""


DUMP_STAGES = ("ir", "passes", "passes+ir", "optimized", "source", "tiers")


def _ignored(name: str, value: str, expected: str, default: str):
    # (a value not understood was taken silently: TRACEJIT_TIERED=maybe tiered, and
    # TRACEJIT_RETRACE_WARN=abc failed `import tracejit` with int()'s message, naming no variable)
    warnings.warn(f"tracejit: {name}={value!r} is not understood (expected {expected}); "
                  f"using {default}", ConfigWarning, stacklevel=2)


def _flag(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name, "").strip()
    v = raw.lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    if v:
        _ignored(name, raw, "1 or 0, true or false, yes or no, on or off",
                 f"the default, {int(default)}")
    return default


def _count(name: str) -> int | None:
    v = os.environ.get(name, "").strip()
    if v and not v.isdigit():
        _ignored(name, v, "a count >= 0", "the default")
    return int(v) if v.isdigit() else None


def _int(name: str, default: int) -> int:
    v = os.environ.get(name, "").strip()
    try:
        return int(v) if v else default
    except ValueError:
        _ignored(name, v, "a whole number", f"the default, {default}")
        return default


def _dump() -> frozenset:
    stages = frozenset(s.strip() for s in os.environ.get("TRACEJIT_DUMP", "").split(",")
                       if s.strip())
    unknown = sorted(stages - set(DUMP_STAGES))
    if unknown:
        _ignored("TRACEJIT_DUMP", ",".join(unknown), "a list of " + ", ".join(DUMP_STAGES),
                 "the others")
    return stages


@dataclass
class Config:
    disable_jit: bool = field(default_factory=lambda: _flag("TRACEJIT_DISABLE_JIT"))
    explain_retrace: bool = field(default_factory=lambda: _flag("TRACEJIT_EXPLAIN_RETRACE"))
    dump: frozenset = field(default_factory=_dump)
    cache_dir: str | None = field(default_factory=lambda: os.environ.get("TRACEJIT_CACHE_DIR")
                                  or None)
    retrace_warn: int = field(default_factory=lambda: _int("TRACEJIT_RETRACE_WARN", 8))
    backend: str = field(default_factory=lambda: os.environ.get("TRACEJIT_BACKEND", "numba"))
    numpy_group_max: int = field(default_factory=lambda: _int("TRACEJIT_NUMPY_GROUP_MAX", 0))
    compile_workers: int | None = field(default_factory=lambda: _count("TRACEJIT_COMPILE_WORKERS"))
    compile_threads: int | None = field(default_factory=lambda: _count("TRACEJIT_COMPILE_THREADS"))
    tiered: bool = field(default_factory=lambda: _flag("TRACEJIT_TIERED", True))
    direct: bool = field(default_factory=lambda: _flag("TRACEJIT_DIRECT", True))
    f16c: bool = field(default_factory=lambda: _flag("TRACEJIT_F16C", True))


config = Config()
