"""Choosing how a traced Function runs: compiled Numba kernels (the default; tiered, see
tiered.py), the NumPy first tier alone (``backend="numpy"``) or the reference interpreter
(``jit(f, backend="interpreter")``), or CUDA kernels on a GPU (``backend="cuda"``, which
``jit(f, device="cuda")`` means; codegen/cuda/, imported only when asked for, so numba-cuda
stays optional).

A program takes the flat list of argument leaves and returns the flat list (or tuple) of
result arrays; Python scalars among the leaves are converted to the parameter's dtype.
What each kind of program carries is in executable.py.
"""
from __future__ import annotations

import sys

from ..codegen import Plan, compile_plan
from ..codegen.numpy_tier import NumpyProgram
from ..config import config
from ..ir import Function
from .executable import Executable, Interpreted
from .pipeline import dump_log, fusion_of, mixed_plan, optimized_of, plan_of
from .tiered import COMPILE_AT_ONCE_OPS, WAIT_OPS, TieredProgram

BACKENDS = ("numba", "numpy", "interpreter", "cuda")


def _numba_program(fn: Function, plan: Plan | None = None, in_process_only: bool = False,
                   log=None, remat=None):
    """The compiled program of ``fn`` (of its ``plan``, if built already); with
    ``in_process_only``, None unless every kernel is compiled in this process already."""
    if plan is None:
        plan = plan_of(fn, log=log, remat=remat)
    fusion = plan.fusion
    program = compile_plan(plan, in_process_only)
    if program is None:
        return None
    if "optimized" in config.dump:
        print(f"== optimized @{fn.name} ==\n{fusion}", file=sys.stderr)
    if "source" in config.dump:
        print(f"== source @{fn.name} ==\n{program.sources}", file=sys.stderr)
    return Executable(fn, program, str(fusion))


def _numpy_program(fn: Function, optimized: Function | None = None, log=None, remat=None):
    program = NumpyProgram(optimized if optimized is not None else optimized_of(fn, log, remat))
    program.function = fn
    return program


def _cuda_program(fn: Function, device_results: bool = False, log=None, remat=None):
    from ..codegen.cuda import CudaProgram
    program = CudaProgram(fn, fusion_of(fn, log=log, remat=remat), device_results=device_results)
    if "source" in config.dump:
        print(f"== source @{fn.name} ==\n{program.source}", file=sys.stderr)
    return program


def _stages(fn: Function, plan: Plan) -> list:
    """The background stages of a tiered program: ("mixed", build)? then ("compiled", build)."""
    stages = [("compiled", lambda: _numba_program(fn, plan))]
    mixed = mixed_plan(plan)
    if mixed is not None:
        stages.insert(0, ("mixed", lambda: _numba_program(fn, mixed)))
    return stages


def _tiered_program(fn: Function, log=None, remat=None):
    """The compiled program at once if every kernel is compiled in this process already, else
    the NumPy tier while the kernels compile, or load from the disk cache, in the background.
    Even a warm disk cache is loaded in the background: loading 15 kernels (the MLP step) and
    SciPy's BLAS took 0.45 s, a first call on the NumPy tier 0.08-0.15 s (CNN step: 0.84-0.96
    against 0.62-0.84 s). A NumPy tier running many ops a call (loops: tiered.WAIT_OPS) is
    used for the first call alone, or not at all (COMPILE_AT_ONCE_OPS)."""
    optimized = optimized_of(fn, log, remat)
    plan = plan_of(fn, optimized, log)
    ready = _numba_program(fn, plan, in_process_only=True)
    if ready is not None:
        return ready
    first = _numpy_program(fn, optimized)
    waits = first.op_runs >= WAIT_OPS
    if first.op_runs >= COMPILE_AT_ONCE_OPS:
        try:
            return _numba_program(fn, plan)
        except Exception:     # noqa: BLE001 (the tiered program below reports it, and runs)
            pass
    stages = _stages(fn, plan)
    # (waiting, the mixed stage would only be compiled on the way to the last one)
    program = TieredProgram(fn.name, first, stages[-1:] if waits else stages, waits=waits)
    program.function = fn
    return program


def compile_function(fn: Function, backend: str | None = None, tiered: bool | None = None,
                     device_results: bool = False, remat=None):
    """The program running ``fn``. With ``tiered`` (default: ``config.tiered``), the "numba"
    backend answers on the NumPy tier at once while its kernels compile in the background.
    ``device_results``: the "cuda" backend returns device arrays instead of NumPy arrays.
    ``TRACEJIT_DUMP=passes`` prints each pass of the backend's pipeline as it runs.
    ``remat``: "auto" or a policy recomputes cheap residuals (ir/passes/remat.py); the
    interpreter runs the traced Function as it is, so it ignores it."""
    backend = backend or config.backend
    tiered = config.tiered if tiered is None else tiered
    if "ir" in config.dump:
        print(f"== ir @{fn.name} ==\n{fn}", file=sys.stderr)
    log = dump_log()
    if backend == "interpreter":
        return Interpreted(fn)
    if backend == "numpy":
        return _numpy_program(fn, log=log, remat=remat)
    if backend == "numba":
        return (_tiered_program(fn, log, remat) if tiered
                else _numba_program(fn, log=log, remat=remat))
    if backend == "cuda":
        return _cuda_program(fn, device_results, log, remat)
    raise ValueError(f"unknown backend {backend!r}; choose one of {BACKENDS}")


def program_of(fn: Function):
    """``compile_function(fn)`` for the configured backend, kept while ``fn`` lives: for
    Functions run again and again outside any jit (the forward and backward pass of a vjp).
    Kept on ``fn`` itself: every program refers to its Function (``program.function``), so a
    WeakKeyDictionary keyed by ``fn`` held each key alive through its value, and a vjp in a
    loop kept every Function and program it ever made."""
    by_backend = fn.__dict__.get("_programs")
    if by_backend is None:
        by_backend = fn.__dict__.setdefault("_programs", {})
    program = by_backend.get(config.backend)
    if program is None:
        program = by_backend[config.backend] = compile_function(fn)
    return program
