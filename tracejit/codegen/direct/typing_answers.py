"""Numba's answers about scalar types, kept: an operator's or a math function's signature on
scalar operands, and the unification of two scalar types. A process whose questions all have
kept answers never sets up Numba's typing context, which costs 0.26-0.31 s of a cold first
compile, in the calling process and again in each compile worker.

Two places keep them:
- shipped with tracejit (``numba_answers.json`` beside this file): every question the direct
  compiler can ask, answered by one Numba version and used only with that version. Made by
  ``python -m tracejit.codegen.direct.numba_typing``; a test asks Numba again and compares.
- learned, in the kernel cache folder (``numba_typing.json``): questions the shipped file does
  not answer, such as every question under another Numba version. One line per answer, each
  with its own SHA-256, appended as it is learned (a process learning n answers writes O(n)
  bytes; rewriting the whole table per answer wrote 8.2 MB for 500 answers, 132 MB for
  2000). A line that does not check out (torn by a crash mid-append, corrupt, or a file in
  another format) is never used: the reader rebuilds the file from the lines that do.

Questions and answers are text: ``operator.add(int32,float32)`` -> ``["float64", "float64",
"float64"]`` (the operand types to convert to, then the result's), ``unify(int8,uint8)`` ->
``"int16"``; None where Numba has no answer (the kernel goes to Numba).
"""
from __future__ import annotations

import errno
import hashlib
import json
import math
import operator
import os
import stat
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
            self.table, lines, sound = _read(path)
            if not sound or lines > 2 * len(self.table) + 64:
                # a bad line, or many repeated answers (processes learning the same ones at
                # once): the file again, whole, from the lines that check out
                _rewrite(path, self.table)

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
                _append(self.path, _line(q, answer), self.table)


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


# -- the learned file: one sealed line per answer ---------------------------------------------
def _line(q: str, answer) -> bytes:
    """``sha256(payload).hex() + payload + newline``, the payload ``[question, answer]`` as
    JSON (which escapes any newline inside it)."""
    payload = json.dumps([q, answer], separators=(",", ":")).encode()
    return hashlib.sha256(payload).hexdigest().encode() + payload + b"\n"


def _read(path: Path) -> tuple[dict, int, bool]:
    """(the answers of the lines that check out, the number of lines, whether every line
    did): a missing file is sound and empty; a torn last line (no newline: a crash while
    appending), a line whose checksum or answer does not check out, or a file in another
    format is not sound, and none of its bad lines is used."""
    from ..cache_folder import read_regular
    data = read_regular(path)
    if data is None:
        return {}, 0, not os.path.lexists(path)
    *lines, tail = data.split(b"\n")
    sound = tail == b""
    payloads = [line[64:] for line in lines
                if hashlib.sha256(line[64:]).hexdigest().encode() == line[:64]]
    sound = sound and len(payloads) == len(lines)
    try:                                # one parse for all (a parse per line took 2.5x)
        pairs = json.loads(b"[" + b",".join(payloads) + b"]")
        if len(pairs) != len(payloads):
            raise ValueError("a line holds more or less than one answer")
    except ValueError:
        pairs = [_parsed(p) for p in payloads]
    table = {}
    for pair in pairs:
        if (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and _valid({pair[0]: pair[1]})):
            table[pair[0]] = pair[1]
        else:
            sound = False
    return table, len(lines), sound


def _parsed(payload: bytes):
    try:
        return json.loads(payload)
    except ValueError:
        return None


def _append(path: Path, line: bytes, table: dict):
    """One line added at the end of the file (made if missing, 0600), in one write: with
    O_APPEND, the lines that processes learning at once append do not overwrite one another.
    Anything but a regular file in its place (a symbolic link, a FIFO) is not written
    through: the file is made again whole (``table``, the answers with this one)."""
    def write():
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                         | getattr(os, "O_NONBLOCK", 0), 0o600)
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                raise
            fd = None
        if fd is not None:
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.write(fd, line)
                    return
            finally:
                os.close(fd)
        _replace(path, table)
    _write(path, write)


def _rewrite(path: Path, table: dict):
    """The file whole, replaced at once (a reader never sees half of it)."""
    _write(path, lambda: _replace(path, table))


def _replace(path: Path, table: dict):
    from ..cache_folder import atomic_write
    atomic_write(path, b"".join(_line(q, a) for q, a in table.items()))


def _write(path: Path, write):
    """``write()`` as ``cache_folder.write_sealed`` writes its files: in a cache folder by the
    folder's policy (nothing is written to a read-only one, a full disk is told once, its
    ``direct`` folder is made 0700 if missing); elsewhere an unwritable place only costs
    asking Numba again."""
    from .. import cache_folder
    folder = cache_folder._owner(path)       # (write_sealed's own way to find it)
    if folder is not None:
        def made_and_written():
            cache_folder._mkdir_or_raise(path.parent)
            write()
        folder.attempt(made_and_written)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write()
    except OSError:
        pass


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
