"""What call a frame's current instruction is making, read from the source: the callee of
``np.zeros(...)`` on the user's line (numpy/patches.py asks whether the user called a patched
function or compiled code did), and the call expression itself (errors.py rewrites
``table.take(i)`` into ``np.take(table, i)`` for its hint). Imports nothing of tracejit's, so
that both can use it."""
from __future__ import annotations

import ast
import linecache

UNKNOWN = object()
_CALLEES: dict = {}      # (code, instruction offset) -> the callee's AST node, or None


def callee(frame):
    """What ``frame``'s current call instruction calls, when its callee is a name or an
    attribute chain (``np.zeros``, ``np.random.randn``, ``rng.normal``), read again in the
    frame; the name it ends with, as a str, for other callees (``make()().zeros``,
    ``fns[0]``: nothing is called to find out); ``UNKNOWN`` without the source."""
    key = (frame.f_code, frame.f_lasti)
    if key not in _CALLEES:
        _CALLEES[key] = _callee_node(frame.f_code, frame.f_lasti)
    node = _CALLEES[key]
    if node is None:
        return UNKNOWN
    try:
        return _read(node, frame)
    except Exception:                                            # noqa: BLE001
        return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _callee_node(code, lasti: int):
    call = call_node(code, lasti)
    return call.func if call is not None else None


def call_node(code, lasti: int) -> ast.Call | None:
    """The call expression that instruction ``lasti`` of ``code`` makes, parsed from the
    source (None without the source, or for another instruction)."""
    try:
        lineno, end_lineno, col, end_col = list(code.co_positions())[lasti // 2]
        lines = linecache.getlines(code.co_filename)
        if None in (lineno, end_lineno, col, end_col) or end_lineno > len(lines):
            return None
        span = [line.encode() for line in lines[lineno - 1:end_lineno]]
        span[-1] = span[-1][:end_col]
        span[0] = span[0][col:]
        call = ast.parse(b"".join(span).decode().strip(), mode="eval").body
    except (SyntaxError, ValueError, IndexError, AttributeError, UnicodeDecodeError):
        return None
    return call if isinstance(call, ast.Call) else None


def _read(node, frame):
    """A name or an attribute chain's value in ``frame`` (anything else: ValueError)."""
    if isinstance(node, ast.Attribute):
        return getattr(_read(node.value, frame), node.attr)
    if not isinstance(node, ast.Name):
        raise ValueError("not a name")
    for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
        if node.id in scope:
            return scope[node.id]
    raise NameError(node.id)
