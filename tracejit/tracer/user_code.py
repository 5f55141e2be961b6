"""What a user's function reads and stores, read from its bytecode: the globals it loads,
the names it stores or passes to ``isinstance``, and whether its code is the user's at all.
The tracer (external_arrays.py) and the guards (driver/guards.py, attribute_reads.py) decide
from these which arrays a trace lifts and which values it must watch."""
from __future__ import annotations

import dis
import functools
import sysconfig
import types

from .errors import _is_internal

MISSING = object()         # a name or cell with no value
_LIBRARY_DIRS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})
STORES = frozenset(("STORE_GLOBAL", "DELETE_GLOBAL"))
CELL_STORES = frozenset(("STORE_DEREF", "DELETE_DEREF"))
# Builtins that read or write the globals dict itself: a copy's would not be the module's
READS_GLOBALS = frozenset(("globals", "eval", "exec"))
# A class body defined in a function reads the function's globals with LOAD_NAME
_GLOBAL_LOADS = frozenset(("LOAD_GLOBAL", "LOAD_NAME"))


@functools.lru_cache(maxsize=4096)
def instructions(code) -> tuple:
    """``code``'s decoded bytecode. Every top-level trace scans the user's functions several
    times (globals read, names stored, isinstance'd names; attribute_reads' chains): decoding
    the MLP step's functions each time was 0.1 s of a 0.5 s trace."""
    return tuple(dis.get_instructions(code))


def global_names(code) -> set:
    """The names ``code`` and the code nested in it read as globals: LOAD_GLOBAL's (not
    co_names, which also holds attribute names: ``model.params`` must not be taken for a
    notebook's global ``params``)."""
    names = {i.argval for i in instructions(code) if i.opname in _GLOBAL_LOADS}
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= global_names(c)
    return names


def is_library(filename: str) -> bool:
    """Code of tracejit, of the standard library or of an installed package: not the user's."""
    if _is_internal(filename):
        return True
    return filename.startswith(_LIBRARY_DIRS) or filename.startswith("<frozen")


def cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return MISSING


def stored_names(code, opnames) -> set:
    """The names ``code`` (and code nested in it) stores or deletes with these opcodes."""
    names = {i.argval for i in instructions(code) if i.opname in opnames}
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= stored_names(c, opnames)
    return names


_LOADS = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLOSURE"))


def type_checked(code) -> set:
    """The names ``code`` (and code nested in it) passes to ``isinstance`` or ``type``
    (``isinstance(W, np.ndarray)``): a tracer is no ndarray, so those arrays stay constants."""
    names, previous = set(), None
    for i in instructions(code):
        if previous is not None and i.opname in _LOADS:
            names.add(i.argval)
        previous = (i if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")
                    and i.argval in ("isinstance", "type") else None)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= type_checked(c)
    return names
