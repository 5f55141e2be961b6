"""Choosing how a traced Function runs: compiled Numba kernels (the default) or the reference
interpreter (``jit(f, backend="interpreter")``).

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

BACKENDS = ("numba", "interpreter")


def _interpreter_program(fn: Function):
    np_dtypes = [p.type.dtype.np for p in fn.params]

    def run(leaves):
        args = [np.asarray(x, dtype=d) for x, d in zip(leaves, np_dtypes)]
        return interpret(fn, args)

    run.function = fn
    return run


def _numba_program(fn: Function):
    from .codegen import compile_plan
    from .ir.passes import fuse, optimize
    fusion = fuse(optimize(fn))
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


def compile_function(fn: Function, backend: str | None = None):
    backend = backend or config.backend
    if "ir" in config.dump:
        print(f"== ir @{fn.name} ==\n{fn}", file=sys.stderr)
    if backend == "interpreter":
        return _interpreter_program(fn)
    if backend == "numba":
        return _numba_program(fn)
    raise ValueError(f"unknown backend {backend!r}; choose one of {BACKENDS}")
