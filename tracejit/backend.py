"""Choosing how a traced Function runs: compiled Numba kernels (the default; tiered, see
tiered.py), the NumPy first tier alone (``backend="numpy"``) or the reference interpreter
(``jit(f, backend="interpreter")``).

A program is a callable taking the flat list of argument leaves and returning the flat list
(or tuple) of result arrays. Python scalars among the leaves are converted to the parameter's
dtype here. Programs carry ``function`` (the traced IR) and, for "numba", ``optimized`` (the IR
after the passes, annotated with its fusion groups) and ``source`` (every kernel's source).
"""
from __future__ import annotations

import sys

import numpy as np

from .config import config
from .ir import Function, interpret

BACKENDS = ("numba", "numpy", "interpreter")


def _interpreter_program(fn: Function):
    np_dtypes = [p.type.dtype.np for p in fn.params]

    def run(leaves):
        args = [np.asarray(x, dtype=d) for x, d in zip(leaves, np_dtypes)]
        outs = interpret(fn, args)
        # Results are fresh arrays, as from the compiled program: NumPy's views of an
        # argument (reshape, x.T) or one array returned twice are copied.
        for i, o in enumerate(outs):
            if any(np.may_share_memory(o, other) for other in args + outs[:i]):
                outs[i] = o.copy()
        return outs

    run.function = fn
    return run


def _numba_program(fn: Function, plan=None, in_process_only: bool = False):
    """The compiled program of ``fn`` (of its ``plan``, if built already); with
    ``in_process_only``, None unless every kernel is compiled in this process already."""
    from .codegen import Plan, compile_plan
    from .ir.passes import fuse, optimize
    if plan is None:
        plan = Plan(fuse(optimize(fn)))
    fusion = plan.fusion
    program = compile_plan(plan, in_process_only)
    if program is None:
        return None
    if "optimized" in config.dump:
        print(f"== optimized @{fn.name} ==\n{fusion}", file=sys.stderr)
    if "source" in config.dump:
        print(f"== source @{fn.name} ==\n{program.sources}", file=sys.stderr)
    run = program.run
    run.guarded = program.guarded
    run.function = fn
    run.program = program
    run.optimized = str(fusion)
    run.source = program.sources
    return run


def _numpy_program(fn: Function, optimized: Function | None = None):
    from .codegen.numpy_tier import NumpyProgram
    from .ir.passes import optimize
    program = NumpyProgram(optimized if optimized is not None else optimize(fn))
    program.function = fn
    return program


# The "mixed" stage of a tiered program: loop groups of at most this many elements run on
# NumPy while the large groups' kernels are compiled first. Used when it leaves at most
# MIXED_SHARE of the kernels to compile: the MLP step's 5 of 15 (its softmax and cross-entropy
# pieces are small), in use after 2.7-3.0 s instead of 4.9, and 10-20 % slower a step than
# with every kernel (plan.py) while the rest compile.
MIXED_GROUP_MAX = 2048
MIXED_SHARE = 0.6


def _stages(fn: Function, plan) -> list:
    """The background stages of a tiered program: ("mixed", build)? then ("compiled", build)."""
    from .codegen import Plan
    stages = [("compiled", lambda: _numba_program(fn, plan))]
    if plan.numpy_max < MIXED_GROUP_MAX:
        mixed = Plan(plan.fusion, numpy_max=MIXED_GROUP_MAX)
        if 0 < len(set(mixed.kernel_sources)) <= MIXED_SHARE * len(set(plan.kernel_sources)):
            stages.insert(0, ("mixed", lambda: _numba_program(fn, mixed)))
    return stages


def _tiered_program(fn: Function):
    """The compiled program at once if every kernel is compiled in this process already, else
    the NumPy tier while the kernels compile, or load from the disk cache, in the background.
    Even a warm disk cache is loaded in the background: loading 15 kernels (the MLP step) and
    SciPy's BLAS took 0.45 s, a first call on the NumPy tier 0.08-0.15 s (CNN step: 0.84-0.96
    against 0.62-0.84 s)."""
    from .codegen import Plan
    from .ir.passes import fuse, optimize
    from .tiered import TieredProgram
    optimized = optimize(fn)
    plan = Plan(fuse(optimized))
    ready = _numba_program(fn, plan, in_process_only=True)
    if ready is not None:
        return ready
    program = TieredProgram(fn.name, _numpy_program(fn, optimized), _stages(fn, plan))
    program.function = fn
    return program


def compile_function(fn: Function, backend: str | None = None, tiered: bool | None = None):
    """The program running ``fn``. With ``tiered`` (default: ``config.tiered``), the "numba"
    backend answers on the NumPy tier at once while its kernels compile in the background."""
    backend = backend or config.backend
    tiered = config.tiered if tiered is None else tiered
    if "ir" in config.dump:
        print(f"== ir @{fn.name} ==\n{fn}", file=sys.stderr)
    if backend == "interpreter":
        return _interpreter_program(fn)
    if backend == "numpy":
        return _numpy_program(fn)
    if backend == "numba":
        return _tiered_program(fn) if tiered else _numba_program(fn)
    raise ValueError(f"unknown backend {backend!r}; choose one of {BACKENDS}")
