"""Types of the kernel language, asked of Numba's typing context: the operand types an
operator converts to and its result's, unification where two values meet, and the types of
constants. Asking Numba (rather than restating its rules) keeps a directly compiled kernel's
arithmetic the same as Numba's on the same source.

Setting up Numba's typing context costs 0.26 s of a process's first compile (its registries
import much of Numba), so Numba's answers about scalar types are also kept on disk, in the
kernel cache folder (whose name changes with Numba's version and with this code): a process
whose questions were all answered before never sets the context up. The file is checksummed;
one that does not check out is ignored and written again."""
from __future__ import annotations

import json
import operator
import threading
from pathlib import Path

import numpy as np
from numba import types
from numba.np.numpy_support import from_dtype

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
        if sig is _UNKNOWN:
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
    if u is _UNKNOWN:
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


# -- Numba's answers about scalar types, kept on disk ------------------------------------------
_SCALARS = {str(t): t for t in (types.boolean, *types.integer_domain, *types.real_domain)}
_NAME_OF = {getattr(operator, name): f"operator.{name}" for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and_",
    "or_", "xor", "neg", "pos", "invert", "not_", "lt", "le", "gt", "ge", "eq", "ne")}
_UNKNOWN = object()


class _Answers:
    def __init__(self):
        self.lock = threading.Lock()
        self.path: Path | None = None
        self.table: dict = {}          # question -> answer, both as text

    def use(self, path: Path):
        with self.lock:
            if self.path is not None:
                return
            self.path = path
            self.table = _read(path)

    def signature(self, fn, argtypes):
        q = _question(fn, argtypes)
        a = self.table.get(q, _UNKNOWN) if q else _UNKNOWN
        if a is _UNKNOWN or a is None:
            return a
        from numba.core.typing import signature
        *args, ret = (_SCALARS[t] for t in a)
        return signature(ret, *args)

    def remember_signature(self, fn, argtypes, sig):
        q = _question(fn, argtypes)
        if sig is None:
            self._remember(q, None)
        elif all(str(t) in _SCALARS for t in (*sig.args, sig.return_type)):
            self._remember(q, [str(t) for t in (*sig.args, sig.return_type)])

    def unified(self, a, b):
        q = _question("unify", (a, b))
        u = self.table.get(q, _UNKNOWN) if q else _UNKNOWN
        return u if u is _UNKNOWN or u is None else _SCALARS[u]

    def remember_unified(self, a, b, u):
        if u is None or str(u) in _SCALARS:
            self._remember(_question("unify", (a, b)), None if u is None else str(u))

    def _remember(self, question, answer):
        if question is None:
            return
        with self.lock:
            if self.table.get(question, _UNKNOWN) == answer:
                return
            self.table[question] = answer
            if self.path is not None:
                _write(self.path, self.table)


def _question(fn, argtypes) -> str | None:
    """The question as text, or None if it is not about scalar types only."""
    name = fn if fn == "unify" else _NAME_OF.get(fn)
    names = [str(t) for t in argtypes]
    if name is None or not all(n in _SCALARS and _SCALARS[n] == t
                               for n, t in zip(names, argtypes)):
        return None
    return f"{name}({','.join(names)})"


def _read(path: Path) -> dict:
    from ..cache_folder import read_sealed
    data = read_sealed(path)
    try:
        table = json.loads(data) if data is not None else {}
        if isinstance(table, dict) and all(
                t in _SCALARS for a in table.values() if a is not None
                for t in ([a] if isinstance(a, str) else a)):
            return table
    except (ValueError, TypeError):
        pass
    return {}                          # missing, torn or corrupt: asked of Numba again


def _write(path: Path, table: dict):
    from ..cache_folder import write_sealed
    write_sealed(path, json.dumps(table, sort_keys=True).encode())


_answers = _Answers()


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


