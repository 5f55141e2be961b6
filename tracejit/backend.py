"""Choosing how a traced Function runs: the reference interpreter, or compiled code.

A program is a callable taking the flat list of argument leaves and returning the flat list of
result arrays. Python scalars among the leaves are converted to the parameter's dtype here.
"""
from __future__ import annotations

import numpy as np

from .ir import Function, interpret

BACKENDS = ("interpreter",)


def _interpreter_program(fn: Function):
    np_dtypes = [p.type.dtype.np for p in fn.params]

    def run(leaves):
        args = [np.asarray(x, dtype=d) for x, d in zip(leaves, np_dtypes)]
        return interpret(fn, args)

    run.function = fn
    return run


def compile_function(fn: Function, backend: str | None = None):
    backend = backend or "interpreter"
    if backend == "interpreter":
        return _interpreter_program(fn)
    raise ValueError(f"unknown backend {backend!r}; choose one of {BACKENDS}")
