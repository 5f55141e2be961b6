"""Errors that point at the user's code: file, line, and what to do instead."""
from __future__ import annotations

import dis
import linecache
import os
import re
import sys
import threading

from .scipy_calls import in_scipy, refusal

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = None


_internal: dict = {}    # filename -> _is_internal's answer


def _is_internal(filename: str) -> bool:
    # Asked for every frame above every traced op (user_location): the MLP step's trace
    # asked 5449 times, 0.27 s of path arithmetic, the same few files again and again.
    known = _internal.get(filename)
    if known is None:
        if len(_internal) > 4096:          # exec'd code can make endless names
            _internal.clear()
        known = _internal[filename] = _classify(filename)
    return known


def _classify(filename: str) -> bool:
    global _NUMPY_DIR
    if _NUMPY_DIR is None:
        import numpy
        _NUMPY_DIR = os.path.dirname(os.path.abspath(numpy.__file__))
    f = os.path.abspath(filename)
    if f.startswith(_PACKAGE_DIR + os.sep):
        # Our own demo and nn modules are user code from the IR's point of view.
        rel = f[len(_PACKAGE_DIR) + 1:]
        return not rel.startswith(("nn" + os.sep, "optim" + os.sep, "demo" + os.sep))
    # SciPy's frames too: a traced value reaches SciPy only on its way to NumPy (scipy_calls)
    return (f.startswith(_NUMPY_DIR + os.sep) or filename.startswith("<__array_function__")
            or in_scipy(f))


_library: dict = {}     # filename -> _in_library's answer


def _in_library(filename: str) -> bool:
    """Whether the file is one of tracejit's nn or optim modules: user code for the IR's
    locations, but an error found in it is the user's mistake at the line that called it."""
    known = _library.get(filename)
    if known is None:
        if len(_library) > 4096:
            _library.clear()
        f = os.path.abspath(filename)
        known = _library[filename] = (
            f.startswith(_PACKAGE_DIR + os.sep)
            and f[len(_PACKAGE_DIR) + 1:].startswith(("nn" + os.sep, "optim" + os.sep)))
    return known


def is_user_file(filename: str) -> bool:
    """Whether code in this file is the user's (not tracejit's, NumPy's or SciPy's)."""
    return not _is_internal(filename)


class SourceLocation:
    """``caller``: for a line in tracejit's nn or optim modules, the user's line that called
    them (errors name both: the user's mistake is in the call, a layer's input shape)."""
    __slots__ = ("filename", "lineno", "caller")

    def __init__(self, filename: str, lineno: int, caller: "SourceLocation | None" = None):
        self.filename = filename
        self.lineno = lineno
        self.caller = caller

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
        where = f"{self.long}" + (f"\n    {text}" if text else "")
        if self.caller is not None:
            where += f"\n  called from {self.caller.describe()}"
        return where

    def __str__(self) -> str:
        return self.short


def user_location() -> SourceLocation | None:
    """The innermost frame outside tracejit and NumPy: where the user's code is."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_internal(filename):
            return SourceLocation(filename, frame.f_lineno,
                                  _caller(frame.f_back) if _in_library(filename) else None)
        frame = frame.f_back
    return None


def _caller(frame) -> SourceLocation | None:
    """The innermost frame from ``frame`` outward that is the user's own (not tracejit's, its
    nn and optim modules included, nor NumPy's)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (_is_internal(filename) or _in_library(filename)):
            return SourceLocation(filename, frame.f_lineno)
        frame = frame.f_back
    return None


def caller_location() -> SourceLocation | None:
    """The user's line that called into tracejit (its nn and optim modules included): where
    an error that nn or optim find in their arguments points."""
    return _caller(sys._getframe(1))


class TracerError(Exception):
    """Base of the errors raised while tracing, each naming the user's file and line."""


_made = threading.local()


def concretizations() -> int:
    """How many ConcretizationErrors this thread has made: a trace tells from it that Python
    code needed a value even where the user's code caught the error (``except TypeError:``)."""
    return getattr(_made, "n", 0)


class ConcretizationError(TracerError):
    """A traced value was used where Python needs a concrete one.

    Not a TypeError itself: NumPy's shape converters (np.zeros(n), x.reshape(n)) swallow a
    TypeError raised by ``__index__`` and replace it with one that names neither the user's line
    nor the fix. ``ConcretizationTypeError`` is the TypeError flavour, for bool(), float(), ...
    """

    def __init__(self, what: str, loc: SourceLocation | None, extra: str = "",
                 what_to_do: str | None = None):
        _made.n = concretizations() + 1
        where = f" at {loc.describe()}" if loc else ""
        msg = (f"tracejit: {what} needs a concrete value, but the value is traced "
               f"(its contents are unknown until the compiled function runs){where}\n"
               "What to do: " + (what_to_do or
                                 "if the value depends only on an argument that is a setting "
                                 "rather than data, mark that argument static with jit(f, "
                                 "static_argnums=...) or static_argnames=...; to choose "
                                 "between values elementwise use np.where(cond, a, b)."))
        if extra:
            msg += "\n" + extra
        super().__init__(msg)


def control_flow_hint(loc: SourceLocation | None) -> str:
    """What to write instead of the Python statement on the user's line that needed a
    concrete value: the control-flow primitive that matches it."""
    line = loc.source_line if loc else ""
    word = re.match(r"(\w+)", line)
    word = word.group(1) if word else ""
    if word in ("if", "elif") or " if " in line:
        return ("For a branch on a traced value: tracejit.cond(pred, true_fn, false_fn, "
                "*operands) traces both branches and runs one (tracejit.switch(index, "
                "[f0, f1, ...], *operands) for more than two).")
    if word == "while":
        return ("For a loop on a traced condition: tracejit.while_loop(cond_fn, body_fn, "
                "init_val) (cond_fn(val) -> bool, body_fn(val) -> val), or "
                "tracejit.fori_loop(lower, upper, body_fn, init_val) for a counted loop.")
    if re.search(r"\brange\(", line):
        return ("For a loop whose trip count is traced: tracejit.fori_loop(lower, upper, "
                "body_fn, init_val) with body_fn(i, val) -> val (a Python int bound keeps it "
                "a loop in the IR, differentiable in reverse mode; tracejit.scan(f, init, xs) "
                "loops over the rows of xs).")
    return ""


class ConcretizationTypeError(ConcretizationError, TypeError):
    """bool(), float(), int() or np.asarray() of a traced value (a TypeError, as in NumPy)."""


class EscapedTracerError(TracerError):
    """A tracer outlived the trace that made it (stored in a global or closure, used later)."""


class UnsupportedError(TracerError, TypeError):
    """A NumPy function or argument that tracejit cannot trace."""


class WriteRefusedError(UnsupportedError):
    """A write into an array of an enclosing trace (``G[0] = v`` in a loop body, ``G`` a
    global): final, where other errors of a trace that lifted the arrays it reads from
    outside have it traced again with them constants (trace_function.py), which would write
    into the user's array itself, once, while tracing."""


def unsupported(what: str, hint: str = "", loc: SourceLocation | None = None,
                cls: type = UnsupportedError) -> UnsupportedError:
    """``loc``: the user's line it is about, when not the one running now."""
    loc = loc or user_location()
    where = f", at {loc.describe()}" if loc else ""
    msg = f"tracejit: {what} is not supported under tracing{where}"
    if hint:
        msg += f"\nWhat to do: {hint}"
    return cls(msg)


def store_into_numpy_array_error() -> TracerError | None:
    """The error for ``a[i] = traced`` where ``a`` is a NumPy array, if that is the statement
    running: NumPy converts the value with float() or np.asarray, and would turn a TypeError
    into "setting an array element with a sequence". Told apart from float(t) by the
    instruction the user's frame is at (a subscript store)."""
    frame = _user_frame_at(_STORE_SUBSCR)
    if frame is None:
        return None
    return ConcretizationError(
        "Writing a traced value into a NumPy array (a[i] = v, where a was made by np.zeros, "
        "np.empty, ... from shapes alone, so it is a constant, not a traced array)",
        SourceLocation(frame.f_code.co_filename, frame.f_lineno),
        "make the array traced so that it can hold traced values: a = np.zeros_like(x) with x "
        "a traced array (or np.zeros(shape) + 0 * x.sum() for another shape); writes into a "
        "traced array are traced, and its views see them.")


_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]
_BINARY_SUBSCR = dis.opmap["BINARY_SUBSCR"]


def _user_frame_at(opcode: int):
    """The innermost frame of the user's code if the instruction it runs is ``opcode``."""
    frame = sys._getframe(2)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None or frame.f_code.co_code[frame.f_lasti] != opcode:
        return None
    return frame


def index_into_constant_error() -> TracerError | None:
    """The error for ``table[ids]`` or ``table[i:i + n]`` with traced indices where ``table`` is
    no traced array (an array read through an attribute, made inside the function, or a
    list), if that is the statement running: NumPy converts the index itself, and the general
    advice (static_argnums) does not fit."""
    frame = _user_frame_at(_BINARY_SUBSCR)
    if frame is None:
        return None
    return ConcretizationError(
        "Indexing a NumPy array or a Python list that is not traced (a constant of the trace: "
        "an array made inside the function, or read through an attribute or a container) "
        "with a traced index (table[ids], x[i:i + n])",
        SourceLocation(frame.f_code.co_filename, frame.f_lineno),
        what_to_do="pass the array as an argument, or bind it to a global variable the "
        "function reads (arguments and global arrays are traced, and take traced indices); a "
        "list of arrays: np.stack it first.")


def array_conversion_error() -> TracerError:
    """np.asarray of a traced value. Either the user wrote the conversion, or a NumPy function
    was given a list of traced values (np.sum([a, b])): NumPy converts the list itself and never
    asks tracejit, so the fix is to stack the values first."""
    numpy_fn, scipy_frame, frame = None, None, sys._getframe(1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        if in_scipy(os.path.abspath(frame.f_code.co_filename)):
            scipy_frame = frame                  # the outermost SciPy frame: what was called
        elif not frame.f_code.co_filename.startswith(_PACKAGE_DIR + os.sep):
            numpy_fn = frame.f_code.co_name      # the outermost NumPy frame: what was called
        frame = frame.f_back
    if scipy_frame is not None:
        return unsupported(*refusal(scipy_frame))
    if numpy_fn == "as_strided":
        return unsupported("np.lib.stride_tricks.as_strided (a view of raw memory, which a "
                           "traced array does not have)",
                           "use np.lib.stride_tricks.sliding_window_view(x, window_shape, axis)"
                           " for sliding windows")
    if numpy_fn is None:            # no NumPy frame: a call from C, an ndarray method?
        method = _numpy_array_method_error()
        if method is not None:
            return method
    if numpy_fn is not None and not numpy_fn.startswith("_"):
        return unsupported(f"np.{numpy_fn} of a list or tuple holding traced values (NumPy "
                           "converts the list with np.asarray, which needs concrete values, "
                           "before tracejit sees it)",
                           f"stack the values into one array first: np.{numpy_fn}("
                           "np.stack([a, b]), ...)")
    return ConcretizationTypeError(
        "Converting a traced value to a NumPy array (np.asarray, np.array, .tolist())",
        user_location(),
        "Inside a jitted function the value is already array-like: drop the conversion "
        "(np.asarray or np.array around it), use .astype(dtype) to change its dtype, and "
        "np.array([a, b]) or np.stack([a, b]) to build an array from traced values. "
        "(np.array reaches tracejit when called as np.array(...); a name bound before tracing, "
        "as by `from numpy import array`, converts in NumPy itself: call np.array, or pass "
        "like=x.)")


def _numpy_array_method_error() -> TracerError | None:
    """The error for ``table.take(ids)`` (a method of a NumPy array, not a traced one, given
    traced arguments), if that is the call the user's line is making. NumPy's methods run in
    C: they convert their arguments with ``__array__`` and never dispatch to tracejit, and
    ``ndarray``'s methods cannot be replaced (a built-in type), so the call cannot be traced;
    the same function of ``np`` can (np.take of a NumPy array at traced indices is a traced
    gather: numpy/patches.py)."""
    import ast

    import numpy as np

    from .call_site import call_node, callee as called
    frame = sys._getframe(2)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    callee = called(frame)
    receiver = getattr(callee, "__self__", None)
    name = getattr(callee, "__name__", None)
    if (not isinstance(receiver, np.ndarray) or not isinstance(name, str)
            or getattr(type(receiver), name, None) is None):
        return None
    call = call_node(frame.f_code, frame.f_lasti)
    try:
        arr = ast.unparse(call.func.value)
        args = [ast.unparse(a) for a in call.args] + [
            f"{k.arg}={ast.unparse(k.value)}" if k.arg else f"**{ast.unparse(k.value)}"
            for k in call.keywords]
    except Exception:                                            # noqa: BLE001
        arr, args = "arr", ["..."]
    instead = f"np.{name}({', '.join([arr] + args)})"
    loc = SourceLocation(frame.f_code.co_filename, frame.f_lineno)
    what = (f"{arr}.{name}({', '.join(args)}) with a traced argument ({arr} is a NumPy array, "
            f"not a traced one, and its .{name} method converts its arguments itself, in "
            "NumPy's C code, without asking tracejit; NumPy's array methods cannot be "
            "replaced)")
    if name == "take":
        index = args[0] if args and "=" not in args[0] else "indices"
        hint = (f"write {instead} instead: np.take of a NumPy array at traced indices is "
                f"traced. ({arr}[{index}] works too where {arr} is an argument or a global "
                "array of the function: it is then traced.)")
    elif callable(getattr(np, name, None)):
        hint = (f"write {instead} instead: tracejit traces NumPy's functions of traced "
                "arguments.")
    else:
        hint = (f"pass {arr} as an argument of the function (a traced array has the "
                "methods tracejit supports).")
    return ConcretizationTypeError(what, loc, what_to_do=hint)


def numpy_error(exc_type: type, what: str, hint: str = "",
                loc: SourceLocation | None = None) -> Exception:
    """A mistake NumPy rejects too (a shape, axis, index or overflow error found while tracing),
    as the exception type NumPy raises, so ``except ValueError`` keeps working, plus the user's
    line, which NumPy's own message cannot give because the error surfaces inside tracejit.
    ``loc``: the line it is about, when not the one running now (caller_location())."""
    loc = loc or user_location()
    msg = f"tracejit: {what}" + (f" at {loc.describe()}" if loc else "")
    if hint:
        msg += f"\nWhat to do: {hint}"
    return exc_type(msg)        # AxisError's one-argument form takes the whole message too


def call_error(what: str, hint: str, exc_type: type = TypeError) -> Exception:
    """A call of a jitted or transformed function that cannot work: an argument that cannot be
    traced (named by its path, ``x`` or ``params['w']``) or an output grad cannot use. Names the
    user's call."""
    loc = user_location()
    return exc_type(what + (f"\n  in the call at {loc.describe()}" if loc else "")
                    + f"\nWhat to do: {hint}")
