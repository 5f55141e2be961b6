"""Types of the kernel language, asked of Numba's typing context: the operand types an
operator converts to and its result's, unification where two values meet, and the types of
constants. Asking Numba (rather than restating its rules) keeps a directly compiled kernel's
arithmetic the same as Numba's on the same source.

Numba's answers about scalar types are kept (typing_answers.py): shipped with tracejit and
learned in the kernel cache folder, so that a process whose questions all have kept answers
never sets up Numba's typing context."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import types
from numba.np.numpy_support import from_dtype

from .typing_answers import SHIPPED, UNKNOWN, Answers, every_question
from .values import Unsupported

_typing = None
_resolved: dict = {}


def typing_context():
    global _typing
    if _typing is None:
        from numba.core.registry import cpu_target
        tc = cpu_target.typing_context
        tc.refresh()
        _typing = tc
    return _typing


def unprepared_typing_context():
    """Numba's typing context as it is, set up or not: for the typers of our intrinsics, which
    take it but ask it nothing (one that did would fail, and Numba would compile the kernel)."""
    from numba.core.registry import cpu_target
    return _typing if _typing is not None else cpu_target.typing_context


def resolve(fn, argtypes: tuple):
    """Numba's signature for ``fn`` on ``argtypes`` (operand types to convert to, and the
    result's), or Unsupported."""
    key = (fn, argtypes)
    if key not in _resolved:
        sig = _answers.signature(fn, argtypes)
        if sig is UNKNOWN:
            try:
                sig = typing_context().resolve_function_type(fn, argtypes, {})
            except Exception:                    # noqa: BLE001 (Numba's typing errors vary)
                sig = None
            _answers.remember_signature(fn, argtypes, sig)
        _resolved[key] = sig
    sig = _resolved[key]
    if sig is None:
        raise Unsupported(f"no typing of {getattr(fn, '__name__', fn)}{argtypes}")
    return sig


def unify(a, b):
    if a == b:
        return a
    u = _answers.unified(a, b)
    if u is UNKNOWN:
        u = typing_context().unify_types(a, b)
        _answers.remember_unified(a, b, u)
    if u is None:
        raise Unsupported(f"cannot unify {a} and {b}")
    return u


def remember_in(folder: Path | None):
    """Keep Numba's answers in ``folder`` (the kernel cache's ``direct`` folder), reading
    those kept there before."""
    if folder is not None:
        _answers.use(Path(folder) / "numba_typing.json")


_answers = Answers()


def typeof_constant(x):
    if isinstance(x, (bool, np.bool_)):
        return types.boolean
    if isinstance(x, int):
        return types.int64 if -2**63 <= x < 2**63 else types.uint64
    if isinstance(x, float):
        return types.float64
    if isinstance(x, np.generic):
        return from_dtype(x.dtype)
    if isinstance(x, tuple) and x:
        return types.BaseTuple.from_types([typeof_constant(e) for e in x])
    raise Unsupported(f"constant {x!r}")


def ask_numba() -> dict:
    """Numba's answer to every question, as text."""
    tc = typing_context()
    answers = Answers()
    answers.shipped = {}
    for fn, argtypes in every_question():
        if fn == "unify":
            answers.remember_unified(*argtypes, tc.unify_types(*argtypes))
            continue
        try:
            sig = tc.resolve_function_type(fn, argtypes, {})
        except Exception:                    # noqa: BLE001 (Numba's typing errors vary)
            sig = None
        answers.remember_signature(fn, argtypes, sig)
    return answers.table


if __name__ == "__main__":       # the shipped answers, made anew
    import json

    import numba
    table = ask_numba()
    lines = ",\n".join(f"{json.dumps(q)}: {json.dumps(a)}" for q, a in sorted(table.items()))
    SHIPPED.write_text(f'{{"numba": {json.dumps(numba.__version__)}, "answers": {{\n'
                       f"{lines}\n}}}}\n")        # one answer a line: readable diffs
    print(f"{len(table)} answers of Numba {numba.__version__} written to {SHIPPED}")
