"""The attributes of objects a jitted function reads, for its guards (guards.py).

A trace bakes in ``opt.lr`` as it bakes in a global ``lr``: a learning-rate schedule that
sets ``opt.lr = 0.01`` between steps, or ``model.w = new_w``, must trace again, as
torch.compile's guards on attributes make it do. Found in the bytecode, without running
anything: a global or closure variable followed by attribute loads (``LOAD_GLOBAL opt;
LOAD_ATTR lr``, up to three deep), and, for a method called on such an object
(``opt.update(...)``), the attributes that method reads from ``self`` (``self.lr``; the
methods it calls on ``self`` too, one level). Only attributes held in an object's own
``__dict__`` are read, so a guard never runs a property or ``__getattr__``; one the object
does not hold reads as missing.
"""
from __future__ import annotations

import inspect
import types

from ..tracer.user_code import MISSING, instructions, is_library

MAX_CHAIN = 3
MAX_READS = 32
_ROOTS = frozenset(("LOAD_GLOBAL", "LOAD_DEREF"))
_ATTRS = frozenset(("LOAD_ATTR", "LOAD_METHOD"))
_SELF_LOADS = frozenset(("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF"))


def own_attribute(obj, name: str):
    """``obj.name`` if ``obj`` holds it in its own ``__dict__`` (a module's and a class's too),
    else MISSING; never runs the object's code."""
    try:
        d = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return MISSING
    if not isinstance(d, (dict, types.MappingProxyType)):
        return MISSING
    return d.get(name, MISSING)


def chains(code, self_name: str | None = None) -> set[tuple[str, str, tuple[str, ...]]]:
    """(kind, root name, attribute names) for each ``root.a.b`` that ``code`` (and code nested
    in it) loads, kind "global" or "cell" (a variable of an enclosing function), or "self"
    for a method's first argument ``self_name`` (``self.opt.lr``)."""
    own_cells = set(code.co_cellvars)
    found: set = set()
    root = None
    attrs: list = []
    for ins in instructions(code):
        if self_name is not None and ins.opname in _SELF_LOADS and ins.argval == self_name:
            root, attrs = ("self", self_name), []
        elif ins.opname in _ROOTS and not (ins.opname == "LOAD_DEREF"
                                           and ins.argval in own_cells):
            root, attrs = ("global" if ins.opname == "LOAD_GLOBAL" else "cell", ins.argval), []
        elif ins.opname in _ATTRS and root is not None and len(attrs) < MAX_CHAIN:
            attrs.append(ins.argval)
            found.add((root[0], root[1], tuple(attrs)))
            if ins.opname == "LOAD_METHOD":
                root = None
        else:
            root = None
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            found |= chains(c, self_name)
    return found


def subscripts(code) -> set[tuple[str, str, object]]:
    """(kind, root name, key) for each ``root["key"]`` (a constant str or int key) that
    ``code`` (and code nested in it) loads from a global or a closure variable: a config
    dict's ``cfg["lr"]``, guarded as ``opt.lr`` is."""
    own_cells = set(code.co_cellvars)
    found: set = set()
    ins = instructions(code)
    for a, b, c in zip(ins, ins[1:], ins[2:]):
        if a.opname in _ROOTS and not (a.opname == "LOAD_DEREF" and a.argval in own_cells) \
                and b.opname == "LOAD_CONST" and type(b.argval) in (str, int) \
                and c.opname == "BINARY_SUBSCR":
            found.add(("global" if a.opname == "LOAD_GLOBAL" else "cell", a.argval, b.argval))
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            found |= subscripts(c)
    return found


def self_attributes(cls, name: str, depth: int = 0) -> set[str]:
    """The attributes method ``name`` of ``cls`` reads from its first argument (``self.lr``),
    with those of the methods it calls on it (one level)."""
    method = inspect.getattr_static(cls, name, None)
    if not isinstance(method, types.FunctionType) or not method.__code__.co_argcount:
        return set()
    code = method.__code__
    me = code.co_varnames[0]
    names: set = set()
    previous = None
    for ins in instructions(code):
        if previous is not None and previous.opname == "LOAD_FAST" and previous.argval == me \
                and ins.opname in _ATTRS:
            names.add(ins.argval)
        previous = ins
    if depth == 0:
        for n in list(names):
            names |= self_attributes(cls, n, 1)
    return names


def read_chain(value, attrs: tuple[str, ...]):
    """``value.a.b`` through own attributes only, or MISSING."""
    for a in attrs:
        if value is MISSING:
            return MISSING
        value = own_attribute(value, a)
    return value


def guardable_root(value) -> bool:
    """Objects whose attributes are guarded: not a library's module (``np.pi``), not a
    function (its attributes are not what it computes)."""
    if isinstance(value, types.ModuleType):
        return is_user_module(value)
    return not isinstance(value, (types.FunctionType, types.BuiltinFunctionType,
                                  types.MethodType))


def is_user_module(value) -> bool:
    return isinstance(value, types.ModuleType) and not is_library(
        getattr(value, "__file__", None) or "<frozen>")
