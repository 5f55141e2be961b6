"""What call a frame's current instruction is making, read from the source: the callee of
``np.zeros(...)`` on the user's line (numpy/patches.py asks whether the user called a patched
function or compiled code did), and the call expression itself (errors.py rewrites
``table.take(i)`` into ``np.take(table, i)`` for its hint). Imports nothing of tracejit's, so
that both can use it."""
from __future__ import annotations

import ast
import dis
import linecache

UNKNOWN = object()
_CALLEES: dict = {}      # (code, instruction offset) -> the callee's AST node, or None


def callee(frame):
    """What ``frame``'s current call instruction calls, when its callee is a name or an
    attribute chain (``np.zeros``, ``np.random.randn``, ``rng.normal``), read again in the
    frame; the name it ends with, as a str, for other callees (``make()().zeros``,
    ``fns[0]``: nothing is called to find out); ``UNKNOWN`` if neither the source nor the
    bytecode says."""
    key = (frame.f_code, frame.f_lasti)
    if key not in _CALLEES:
        _CALLEES[key] = (_callee_node(frame.f_code, frame.f_lasti)
                         or _callee_from_bytecode(frame.f_code, frame.f_lasti))
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


# Instructions that load the start of a callee's attribute chain, and those that extend it
_LOAD_BASE = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE",
              "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR"}
_LOAD_ATTR = {"LOAD_ATTR", "LOAD_METHOD"}
_SKIPPED = {"PRECALL", "KW_NAMES", "CACHE", "PUSH_NULL"}


def _callee_from_bytecode(code, lasti: int):
    """The callee of the call at ``lasti`` read from the bytecode, for code without source
    (``python -c``, the REPL, ``exec``): the instructions before the call that push its
    arguments are walked back over by their stack effects (straight-line code only), and the
    ones before them must load a name and its attributes (``np.random.normal``), returned as
    the AST node the source would have given. None where anything else is met."""
    try:
        ins = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
        # (during a call, ``lasti`` is the call's last inline cache entry)
        at = max(k for k, i in enumerate(ins) if i.offset <= lasti)
        if ins[at].opname != "CALL" or ins[at].arg is None:
            return None
        j, need = at - 1, ins[at].arg
        while j >= 0 and ins[j].opname in _SKIPPED:
            j -= 1
        while need > 0 and j >= 0:
            i = ins[j]
            if i.is_jump_target or "JUMP" in i.opname or i.opname in _SKIPPED:
                return None
            need -= dis.stack_effect(i.opcode, i.arg if i.opcode >= dis.HAVE_ARGUMENT
                                     else None, jump=False)
            j -= 1
        while j >= 0 and ins[j].opname == "PUSH_NULL":
            j -= 1
        chain = []
        while j >= 0 and ins[j].opname in _LOAD_ATTR:
            chain.append(ins[j].argval)
            j -= 1
        if need != 0 or j < 0 or ins[j].opname not in _LOAD_BASE:
            return None
        node: ast.expr = ast.Name(id=ins[j].argval)
        for attr in reversed(chain):
            node = ast.Attribute(value=node, attr=attr)
        return node
    except (ValueError, TypeError):
        return None


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
