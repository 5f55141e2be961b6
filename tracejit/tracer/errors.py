"""Errors that point at the user's code: file, line, and what to do instead."""
from __future__ import annotations

import linecache
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = None


def _is_internal(filename: str) -> bool:
    global _NUMPY_DIR
    if _NUMPY_DIR is None:
        import numpy
        _NUMPY_DIR = os.path.dirname(os.path.abspath(numpy.__file__))
    f = os.path.abspath(filename)
    if f.startswith(_PACKAGE_DIR + os.sep):
        # Our own demo and nn modules are user code from the IR's point of view.
        rel = f[len(_PACKAGE_DIR) + 1:]
        return not rel.startswith(("nn" + os.sep, "optim" + os.sep, "demo" + os.sep))
    return f.startswith(_NUMPY_DIR + os.sep) or filename.startswith("<__array_function__")


class SourceLocation:
    __slots__ = ("filename", "lineno")

    def __init__(self, filename: str, lineno: int):
        self.filename = filename
        self.lineno = lineno

    @property
    def short(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"

    @property
    def long(self) -> str:
        return f"{self.filename}:{self.lineno}"

    @property
    def source_line(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def describe(self) -> str:
        text = self.source_line
        return f"{self.long}" + (f"\n    {text}" if text else "")

    def __str__(self) -> str:
        return self.short


def user_location() -> SourceLocation | None:
    """The innermost frame outside tracejit and NumPy: where the user's code is."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _is_internal(frame.f_code.co_filename):
            return SourceLocation(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return None


class TracerError(Exception):
    """Base of the errors raised while tracing, each naming the user's file and line."""


class ConcretizationError(TracerError):
    """A traced value was used where Python needs a concrete one.

    Not a TypeError itself: NumPy's shape converters (np.zeros(n), x.reshape(n)) swallow a
    TypeError raised by ``__index__`` and replace it with one that names neither the user's line
    nor the fix. ``ConcretizationTypeError`` is the TypeError flavour, for bool(), float(), ...
    """

    def __init__(self, what: str, loc: SourceLocation | None, extra: str = ""):
        where = f" at {loc.describe()}" if loc else ""
        msg = (f"tracejit: {what} needs a concrete value, but the value is traced "
               f"(its contents are unknown until the compiled function runs){where}\n"
               "What to do: if the value depends only on an argument that is a setting rather "
               "than data, mark that argument static with jit(f, static_argnums=...) or "
               "static_argnames=...; to choose between values elementwise use np.where(cond, "
               "a, b).")
        if extra:
            msg += "\n" + extra
        super().__init__(msg)


class ConcretizationTypeError(ConcretizationError, TypeError):
    """bool(), float(), int() or np.asarray() of a traced value (a TypeError, as in NumPy)."""


class EscapedTracerError(TracerError):
    """A tracer outlived the trace that made it (stored in a global or closure, used later)."""


class UnsupportedError(TracerError, TypeError):
    """A NumPy function or argument that tracejit cannot trace."""


def unsupported(what: str, hint: str = "") -> UnsupportedError:
    loc = user_location()
    where = f", at {loc.describe()}" if loc else ""
    msg = f"tracejit: {what} is not supported under tracing{where}"
    if hint:
        msg += f"\nWhat to do: {hint}"
    return UnsupportedError(msg)


class ArgumentMismatch(Exception):
    """Raised by a compiled program whose arguments' shapes are not the ones it was planned
    for: JittedFunction's fast path called the wrong program and falls back to looking it up.
    Internal: never reaches the user."""
