"""One corpus case: a function written as its source's author writes NumPy, and its inputs.

Every case is our own rewrite of a function from a public NumPy code base (NPBench, picoGPT,
min-char-rnn, cs231n, HIPS autograd, numpy-ml), with the same NumPy calls, idioms, shapes and
dtypes, named ``<source>_<function>``. ``make(rng, n)`` builds its arguments at size ``n``:
``small`` for the correctness and gradient checks, ``big`` for timing. A function whose Python
control flow depends on array values cannot be traced by design; those are listed by name in
``OUT_OF_SCOPE`` (with the reason) and counted apart, not written as cases.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

SOURCES = ("npbench", "picogpt", "min-char-rnn", "cs231n", "autograd", "numpy-ml")


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    fn: Callable
    make: Callable            # (rng, n) -> tuple of arguments
    small: int
    big: int
    grad: bool                # differentiable in its float arguments (checked if so)
    static: tuple = ()        # argnums that are sizes or counts (jit's static_argnums)


CASES: list[Case] = []

# (name, source, why its Python control flow depends on array values)
OUT_OF_SCOPE: list[tuple[str, str, str]] = []

# (name, source, why): in scope but not rewritten here (say so rather than drop them silently)
NOT_WRITTEN: list[tuple[str, str, str]] = []


def case(source: str, make: Callable, small: int = 4, big: int = 64, grad: bool = True,
         static: tuple = ()):
    """Register the decorated function as a case of ``source``."""
    assert source in SOURCES, source

    def register(fn):
        CASES.append(Case(fn.__name__, source, fn, make, small, big, grad, static))
        return fn
    return register


def out_of_scope(name: str, source: str, why: str) -> None:
    OUT_OF_SCOPE.append((name, source, why))


def not_written(name: str, source: str, why: str) -> None:
    NOT_WRITTEN.append((name, source, why))
