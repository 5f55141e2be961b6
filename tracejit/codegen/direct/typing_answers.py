"""Numba's answers about scalar types, kept: an operator's or a math function's signature on
scalar operands, and the unification of two scalar types. A process whose questions all have
kept answers never sets up Numba's typing context, which costs 0.26-0.31 s of a cold first
compile, in the calling process and again in each compile worker.

Two places keep them:
- shipped with tracejit (``numba_answers.json`` beside this file): every question the direct
  compiler can ask, answered by one Numba version and used only with that version. Made by
  ``python -m tracejit.codegen.direct.numba_typing``; a test asks Numba again and compares.
- learned, in the kernel cache folder (``numba_typing.json``, checksummed: one that does not
  check out is ignored and written again): questions the shipped file does not answer, such
  as every question under another Numba version.

Questions and answers are text: ``operator.add(int32,float32)`` -> ``["float64", "float64",
"float64"]`` (the operand types to convert to, then the result's), ``unify(int8,uint8)`` ->
``"int16"``; None where Numba has no answer (the kernel goes to Numba).
"""
from __future__ import annotations

import json
import math
import operator
import threading
from pathlib import Path

import numba
import numpy as np
from numba import types

from . import math_functions

SHIPPED = Path(__file__).with_name("numba_answers.json")
SCALARS = {str(t): t for t in (types.boolean, *types.integer_domain, *types.real_domain)}
_OPERATORS = {getattr(operator, name): f"operator.{name}" for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and_",
    "or_", "xor", "neg", "pos", "invert", "not_", "lt", "le", "gt", "ge", "eq", "ne")}
UNKNOWN = object()


def function_name(fn) -> str | None:
    """``fn``'s name in a question: operators, ``abs``, and math/NumPy functions by their
    module; None for anything else (asked of Numba every time)."""
    if fn == "unify":
        return fn
    if fn is abs:
        return "abs"
    name = _OPERATORS.get(fn)
    if name is not None:
        return name
    short = getattr(fn, "__name__", None)
    for module in (math, np):
        if short and getattr(module, short, None) is fn:
            return f"{module.__name__}.{short}"
    return None


def question(fn, argtypes) -> str | None:
    """The question as text, or None if it is not about scalar types only."""
    name = function_name(fn)
    names = [str(t) for t in argtypes]
    if name is None or not all(n in SCALARS and SCALARS[n] == t
                               for n, t in zip(names, argtypes)):
        return None
    return f"{name}({','.join(names)})"


class Answers:
    def __init__(self):
        self.lock = threading.Lock()
        self.path: Path | None = None
        self.shipped: dict = _read_shipped(SHIPPED)
        self.table: dict = {}          # learned: question -> answer, both as text

    def use(self, path: Path):
        """Learn into ``path`` (the cache folder's file), reading what it holds."""
        with self.lock:
            if self.path is not None:
                return
            self.path = path
            self.table = _read(path)

    def _answer(self, q):
        if q is None:
            return UNKNOWN
        a = self.shipped.get(q, UNKNOWN)
        return self.table.get(q, UNKNOWN) if a is UNKNOWN else a

    def signature(self, fn, argtypes):
        a = self._answer(question(fn, argtypes))
        if a is UNKNOWN or a is None:
            return a
        from numba.core.typing import signature
        *args, ret = (_type(t) for t in a)
        return signature(ret, *args)

    def remember_signature(self, fn, argtypes, sig):
        q = question(fn, argtypes)
        if sig is None:
            self._remember(q, None)
            return
        answer = [_text(t) for t in (*sig.args, sig.return_type)]
        if None not in answer:
            self._remember(q, answer)

    def unified(self, a, b):
        u = self._answer(question("unify", (a, b)))
        return u if u is UNKNOWN or u is None else SCALARS[u]

    def remember_unified(self, a, b, u):
        if u is None or str(u) in SCALARS:
            self._remember(question("unify", (a, b)), None if u is None else str(u))

    def _remember(self, q, answer):
        if q is None:
            return
        with self.lock:
            if self.table.get(q, UNKNOWN) == answer:
                return
            self.table[q] = answer
            if self.path is not None:
                from ..cache_folder import write_sealed
                write_sealed(self.path, json.dumps(self.table, sort_keys=True).encode())


def _text(t):
    """A scalar type's name, a tuple of scalars as a list of names (``math.frexp``'s result),
    else None (not kept)."""
    if str(t) in SCALARS:
        return str(t)
    if isinstance(t, types.BaseTuple) and all(str(e) in SCALARS for e in t.types):
        return [str(e) for e in t.types]
    return None


def _type(text):
    if isinstance(text, list):
        return types.BaseTuple.from_types([SCALARS[e] for e in text])
    return SCALARS[text]


def _valid(table) -> bool:
    """Every answer None, a scalar name, or a list of signature types (a scalar name or a
    list of them each)."""
    # Plain loops: the shipped table (4268 answers) is checked in every cold process, and
    # nested generators took 0.11 s of it.
    if not isinstance(table, dict):
        return False
    for a in table.values():
        if a is None:
            continue
        if isinstance(a, str):
            if a not in SCALARS:
                return False
            continue
        if not isinstance(a, list):
            return False
        for t in a:
            if isinstance(t, str):
                if t not in SCALARS:
                    return False
            elif not isinstance(t, list) or not all(
                    isinstance(e, str) and e in SCALARS for e in t):
                return False
    return True


def _read(path: Path) -> dict:
    from ..cache_folder import read_sealed
    data = read_sealed(path)
    try:
        table = json.loads(data) if data is not None else {}
        if _valid(table):
            return table
    except (ValueError, TypeError):
        pass
    return {}                          # missing, torn or corrupt: asked of Numba again


def _read_shipped(path: Path) -> dict:
    """The shipped answers if they are this Numba's, else none."""
    try:
        shipped = json.loads(path.read_text())
        if shipped.get("numba") == numba.__version__ and _valid(shipped.get("answers")):
            return shipped["answers"]
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    return {}


# -- the shipped file ---------------------------------------------------------------------------
def every_question():
    """(fn, argtypes) of every question about scalars the direct compiler can ask: each
    operator, ``abs`` and math/NumPy function it lowers, on every scalar type or pair."""
    scalars = list(SCALARS.values())
    unary = [*(f for f, n in _OPERATORS.items()
               if n in ("operator.neg", "operator.pos", "operator.invert", "operator.not_")),
             abs]
    binary = [f for f in _OPERATORS if f not in unary]
    for module in (math, np):
        unary += [getattr(module, n) for n in sorted(math_functions.UNARY) if hasattr(module, n)]
        binary += [getattr(module, n) for n in sorted(math_functions.BINARY)
                   if hasattr(module, n)]
    for fn in unary:
        for a in scalars:
            yield fn, (a,)
    for fn in binary + ["unify"]:
        for a in scalars:
            for b in scalars:
                yield fn, (a, b)
