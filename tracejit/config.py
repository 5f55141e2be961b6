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
from dataclasses import dataclass, field


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def _count(name: str) -> int | None:
    v = os.environ.get(name, "").strip()
    return int(v) if v.isdigit() else None


@dataclass
class Config:
    disable_jit: bool = field(default_factory=lambda: _flag("TRACEJIT_DISABLE_JIT"))
    explain_retrace: bool = field(default_factory=lambda: _flag("TRACEJIT_EXPLAIN_RETRACE"))
    dump: frozenset = field(default_factory=lambda: frozenset(
        s.strip() for s in os.environ.get("TRACEJIT_DUMP", "").split(",") if s.strip()))
    cache_dir: str | None = field(default_factory=lambda: os.environ.get("TRACEJIT_CACHE_DIR")
                                  or None)
    retrace_warn: int = field(default_factory=lambda: int(
        os.environ.get("TRACEJIT_RETRACE_WARN", "8")))
    backend: str = field(default_factory=lambda: os.environ.get("TRACEJIT_BACKEND", "numba"))
    numpy_group_max: int = field(default_factory=lambda: int(
        os.environ.get("TRACEJIT_NUMPY_GROUP_MAX", "0") or 0))
    compile_workers: int | None = field(default_factory=lambda: _count("TRACEJIT_COMPILE_WORKERS"))
    compile_threads: int | None = field(default_factory=lambda: _count("TRACEJIT_COMPILE_THREADS"))
    tiered: bool = field(default_factory=lambda: os.environ.get("TRACEJIT_TIERED", "1").strip()
                         .lower() not in ("0", "false", "no", "off"))
    direct: bool = field(default_factory=lambda: os.environ.get("TRACEJIT_DIRECT", "1").strip()
                         .lower() not in ("0", "false", "no", "off"))
    f16c: bool = field(default_factory=lambda: os.environ.get("TRACEJIT_F16C", "1").strip()
                       .lower() not in ("0", "false", "no", "off"))


config = Config()
