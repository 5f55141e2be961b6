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


def _numba_program(fn: Function, optimized: Function | None = None):
    from .codegen import compile_plan
    from .ir.passes import fuse, optimize
    fusion = fuse(optimized if optimized is not None else optimize(fn))
    if "optimized" in config.dump:
        print(f"== optimized @{fn.name} ==\n{fusion}", file=sys.stderr)
    program = compile_plan(fusion)
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


def _tiered_program(fn: Function):
    from .ir.passes import optimize
    from .tiered import TieredProgram
    optimized = optimize(fn)
    program = TieredProgram(fn.name, _numpy_program(fn, optimized),
                            lambda: _numba_program(fn, optimized))
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
