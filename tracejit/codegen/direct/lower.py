"""A generated kernel's Python source -> one LLVM function, without Numba's compiler.

Kernel sources (kernel.py, templates.py) use a small part of Python: ``for`` over ``range``,
``while``, ``if``, scalar arithmetic, array loads and stores, tuples, a few NumPy and math
functions, and calls to helpers that are Numba functions themselves (mathlib.py, runtime.py,
half.py, blas.py). This module compiles that part directly: a helper written in Python is
inlined from its source, a Numba ``@intrinsic`` runs its own code generator on our builder,
and every operator is typed by Numba's typing context, so a kernel computes what Numba would
have compiled from the same source. Anything else raises ``Unsupported`` and the kernel goes
to Numba as before.

Variables live in stack slots that LLVM's optimizer turns into registers. A variable's type is
the unification of everything assigned to it: when an assignment meets a wider type than the
one the variable started with, the function is lowered again with the wider type from the
start (``_Retype``), which converges in a step or two.

FunctionLowerer holds the function being built, its frames (the kernel and each inlined
helper) and their variables, and calls; statements.py and expressions.py are its other halves.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

from llvmlite import ir
from numba import types
from numba.core.caching import NullCache
from numba.core.dispatcher import Dispatcher
from numba.core.extending import _Intrinsic

from . import calls
from .expressions import Expressions, global_value
from .numba_typing import unify
from .statements import Statements
from .values import (I64, ArrayVal, Global, Method, Unsupported, Val, array_struct, cast,
                     llvm_type, storage_type)


class _Retype(Exception):
    """A variable needs a wider type than it was lowered with: lower the function again."""


class _Frame:
    """One function being lowered: the kernel itself, or a helper inlined into it."""

    def __init__(self, globals_: dict, prefix: str, fastmath: bool, fndef: ast.FunctionDef):
        self.globals = globals_
        self.prefix = prefix
        self.fastmath = fastmath
        self.loops: list = []           # (continue block, break block)
        self.ret_block = None
        self.ret_var = None
        # per function definition, not per frame: a helper (exp32, tanh32) is inlined many
        # times, and each retyping lowers the kernel again
        once = getattr(fndef, "_tracejit_once", None)
        if once is None:
            once = fndef._tracejit_once = frozenset(_assigned_once_at_top(fndef))
        self.once = once
        self.bound: dict = {}           # name in ``once`` -> its value (no stack slot)


def _assigned_once_at_top(fndef: ast.FunctionDef) -> set:
    """Parameters and names stored exactly once, by a statement at the top level of the body.
    Such a value dominates every later use, so it is used as it is: no stack slot and no
    loads (a kernel's arrays and sizes; fewer instructions to build and to optimize)."""
    stores: dict = {}
    for node in ast.walk(fndef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            stores[node.target.id] = stores.get(node.target.id, 0) + 1
    params = {a.arg for a in fndef.args.args}
    top = set()
    for st in fndef.body:
        if isinstance(st, ast.Assign):
            for t in st.targets:
                top.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return {n for n in params if n not in stores} | {
        n for n in top if stores.get(n) == 1 and n not in params}


class FunctionLowerer(Statements, Expressions):
    """Lowers one kernel function into ``module``: ``lower(fndef, argtypes)``."""

    def __init__(self, module: ir.Module, vartypes: dict, target, shared=None):
        self.module = module
        self.shared = shared             # compiles a shared helper: (py_func, types, fastmath)
        self.vartypes = vartypes         # persists across _Retype restarts
        self.target = target             # (triple, cpu, features) for intrinsics' choices
        self.errors: list = []           # (exception class, message) per status code - 1
        self.slots: dict = {}
        self.allocations: list = []
        self.returns_values = False
        self.loop_depth = 0              # loops around the code being lowered, in all frames
        self.loops = 0                   # loops lowered (the kernel's and inlined helpers')
        self.last_stored: dict = {}      # slot -> (block, value) of the last store to it
        self.inline_count = 0

    # -- entry -----------------------------------------------------------------------------
    def lower(self, name: str, fndef: ast.FunctionDef, globals_: dict, argtypes: tuple,
              fastmath: bool) -> ir.Function:
        params = [array_struct(t) if isinstance(t, types.Array) else llvm_type(t)
                  for t in argtypes]
        fn = ir.Function(self.module, ir.FunctionType(I64, params), name=name)
        self.fn = fn
        entry = fn.append_basic_block("entry")
        self.alloca_builder = ir.IRBuilder(entry)
        body = fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        frame = _Frame(globals_, "", fastmath, fndef)
        names = [a.arg for a in fndef.args.args]
        if len(names) != len(argtypes):
            raise Unsupported("argument count")
        for pname, t, arg in zip(names, argtypes, fn.args):
            if isinstance(t, types.Array):
                v = ArrayVal(t, self.b.extract_value(arg, 4),
                             [self.b.extract_value(arg, (5, k)) for k in range(t.ndim)],
                             [self.b.extract_value(arg, (6, k)) for k in range(t.ndim)])
            else:
                v = Val(t, arg)
            self.assign(frame, pname, v)
        self.frame = frame
        self.statements(fndef.body)
        if not self.b.block.is_terminated:
            self.finish(I64(0))
        if self.errors and self.returns_values:
            raise Unsupported("a kernel that raises and returns values other than 0")
        # other builders (cgutils' allocas for Numba intrinsics) append to the entry block too
        self.alloca_builder.position_at_end(entry)
        self.alloca_builder.branch(body)
        return fn

    def finish(self, status):
        """Return ``status`` (0, or the code of an exception) after freeing allocations."""
        for ptr in self.allocations:
            calls.free(self.b, self.b.load(ptr))
        self.b.ret(status)

    # -- variables -------------------------------------------------------------------------
    def slot_type(self, t):
        if isinstance(t, types.Array):
            return ir.LiteralStructType([storage_type(t.dtype).as_pointer(),
                                         ir.ArrayType(I64, t.ndim), ir.ArrayType(I64, t.ndim)])
        return llvm_type(t)

    def assign(self, frame: _Frame, name: str, v):
        key = frame.prefix + name
        t = v.type
        if isinstance(v, Global):
            raise Unsupported(f"assigning {name} a Python object")
        if t == types.none:
            raise Unsupported("assigning None")
        if name in frame.once:
            frame.bound[name] = v
            return
        old = self.vartypes.get(key)
        if old is None:
            self.vartypes[key] = t
        elif old != t:
            u = _unify_arrays(old, t) if isinstance(t, types.Array) else unify(old, t)
            if u != old:
                self.vartypes[key] = u
                raise _Retype()
            t = u
        vt = self.vartypes[key]
        if key not in self.slots:
            self.slots[key] = self.alloca_builder.alloca(self.slot_type(vt), name=key)
        ptr = self.slots[key]
        if isinstance(v, ArrayVal):
            s = ir.Constant(ptr.type.pointee, ir.Undefined)
            s = self.b.insert_value(s, v.data, 0)
            for k in range(vt.ndim):
                s = self.b.insert_value(s, v.shape[k], (1, k))
                s = self.b.insert_value(s, v.strides[k], (2, k))
            self.b.store(s, ptr)
        else:
            v = cast(self.b, v, vt)
            self.b.store(v.value, ptr)
            self.last_stored[key] = (self.b.block, v)

    def read(self, frame: _Frame, name: str):
        if name in frame.bound:
            return frame.bound[name]
        key = frame.prefix + name
        if key in self.slots:
            t = self.vartypes[key]
            block, v = self.last_stored.get(key, (None, None))
            if block is self.b.block:                # stored in this block: that value
                return v
            s = self.b.load(self.slots[key])
            if isinstance(t, types.Array):
                return ArrayVal(t, self.b.extract_value(s, 0),
                                [self.b.extract_value(s, (1, k)) for k in range(t.ndim)],
                                [self.b.extract_value(s, (2, k)) for k in range(t.ndim)])
            return Val(t, s)
        if name in frame.globals:
            return global_value(frame.globals[name])
        builtins = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)
        if name in builtins:
            return Global(builtins[name])
        raise Unsupported(f"name {name}")

    # -- calls -----------------------------------------------------------------------------
    def call(self, fn, args: list):
        if isinstance(fn, Method):
            return calls.array_method(self, fn, args)
        if not isinstance(fn, Global):
            raise Unsupported("calling a value")
        obj = fn.obj
        if isinstance(obj, Dispatcher):
            args = [self.argument(a) for a in args]
            fastmath = _fastmath_of(obj, self.frame.fastmath)
            if _cached(obj) and self.shared is not None:
                return self.call_shared(obj.py_func, args, fastmath)
            return self.inline(obj.py_func, args, fastmath=fastmath)
        if isinstance(obj, _Intrinsic):
            return calls.intrinsic(self, obj, [self.argument(a) for a in args])
        return calls.builtin(self, obj, args)

    def call_shared(self, py_func, args: list, fastmath: bool):
        """A call of a helper compiled once on its own (direct/__init__.py's
        _SharedFunctions), with its arrays as any-layout arrays so that one compiled copy
        serves every caller. It returns nothing (gemm)."""
        args = [ArrayVal(a.type.copy(layout="A"), a.data, a.shape, a.strides)
                if isinstance(a, ArrayVal) else a for a in args]
        argtypes = tuple(a.type for a in args)
        name = self.shared(py_func, argtypes, fastmath)
        params = [array_struct(t) if isinstance(t, types.Array) else llvm_type(t)
                  for t in argtypes]
        try:
            fn = self.module.get_global(name)
        except KeyError:
            fn = ir.Function(self.module, ir.FunctionType(I64, params), name=name)
        self.b.call(fn, [calls.array_struct_value(self.b, a) if isinstance(a, ArrayVal)
                         else a.value for a in args])
        return Val(types.none, None)

    def argument(self, a):
        if isinstance(a, ArrayVal):
            return a
        return self.scalar(a)

    def inline(self, py_func, args: list, fastmath: bool):
        """The value of ``py_func(*args)``, its body lowered here with its own variables."""
        fndef, globals_ = parsed(py_func)
        params = [a.arg for a in fndef.args.args]
        if len(params) != len(args) or fndef.args.vararg or fndef.args.kwonlyargs:
            raise Unsupported(f"call of {py_func.__name__} with other arguments")
        self.inline_count += 1
        frame = _Frame(globals_, f"{py_func.__name__}.{self.inline_count}.", fastmath, fndef)
        frame.ret_block = self.fn.append_basic_block(f"{py_func.__name__}.ret")
        caller, self.frame = self.frame, frame
        try:
            for name, v in zip(params, args):
                self.assign(frame, name, v)
            self.statements(fndef.body)
            if not self.b.block.is_terminated:
                self.b.branch(frame.ret_block)
            self.b.position_at_end(frame.ret_block)
            if frame.ret_var:
                return self.read(frame, "$ret")
            return Val(types.none, None)
        finally:
            self.frame = caller


def _unify_arrays(a, b):
    if not isinstance(a, types.Array) or a.dtype != b.dtype or a.ndim != b.ndim:
        raise Unsupported(f"cannot unify {a} and {b}")
    layout = a.layout if a.layout == b.layout else "A"
    return types.Array(a.dtype, a.ndim, layout, readonly=not (a.mutable and b.mutable))


def _cached(dispatcher) -> bool:
    """Whether the helper is ``@njit(cache=True)``: compiled on its own, as a shared function."""
    return not isinstance(getattr(dispatcher, "_cache", None), (NullCache, type(None)))


def _fastmath_of(dispatcher, caller: bool) -> bool:
    """A helper is compiled with its own flags: mathlib's polynomials contract into fmas
    inside kernels that do not (kernels round every op, as NumPy; source.py). Numba gives an
    ``inline="always"`` helper its caller's flags instead; one that names none gets them here
    too."""
    opts = dispatcher.targetoptions
    fm = opts.get("fastmath")
    if opts.get("inline") == "always" and fm is None:
        return caller
    return bool(fm) and (fm is True or "contract" in fm)


_PARSED: dict = {}


_FILE_DEFS: dict = {}    # filename -> {(name, first line with decorators): FunctionDef}


def _definition(py_func):
    """``py_func``'s definition: its own lines parsed (the code object says where it starts
    and ends), else its file parsed once. inspect.getsource tokenizes the file again for
    every helper (mathlib's, blas.gemm), a tenth of a cold scan step's lowering; parsing
    mathlib.py whole costs a cold process 22 ms, its tanh32 alone 0.3 ms."""
    code = py_func.__code__
    own = _own_lines(py_func)
    if own is not None:
        return own
    defs = _FILE_DEFS.get(code.co_filename)
    if defs is None:
        lines = linecache.getlines(code.co_filename, py_func.__globals__)
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            tree = None
        defs = _FILE_DEFS[code.co_filename] = {} if tree is None else {
            (node.name, min([node.lineno] + [d.lineno for d in node.decorator_list])): node
            for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    fndef = defs.get((py_func.__name__, code.co_firstlineno))
    if fndef is not None:
        return fndef
    try:                            # not in a file of its own (a notebook's, an exec'd one)
        return ast.parse(textwrap.dedent(inspect.getsource(py_func))).body[0]
    except (OSError, TypeError):
        raise Unsupported(f"no source of {py_func.__name__}") from None


def _own_lines(py_func) -> ast.FunctionDef | None:
    """A top-level function's definition parsed from its lines alone, or None."""
    code = py_func.__code__
    lines = linecache.getlines(code.co_filename, py_func.__globals__)
    first, last = code.co_firstlineno, _last_line(code)
    if not lines or last is None or not 1 <= first <= last <= len(lines):
        return None
    snippet = "".join(lines[first - 1:last])
    if snippet[:1].isspace():            # nested or a method: found in its file instead
        return None
    try:
        body = ast.parse(snippet).body
    except (SyntaxError, ValueError):
        return None
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef) or \
            body[0].name != py_func.__name__:
        return None
    ast.increment_lineno(body[0], first - 1)
    return body[0]


def _last_line(code) -> int | None:
    """The last source line of ``code``'s instructions and those of the code nested in it."""
    ends = [p[1] for p in code.co_positions() if p[1] is not None]
    ends += [n for c in code.co_consts if hasattr(c, "co_positions")
             for n in [_last_line(c)] if n is not None]
    return max(ends, default=None)


def parsed(py_func):
    if py_func not in _PARSED:
        fndef = _definition(py_func)
        if not isinstance(fndef, ast.FunctionDef):
            raise Unsupported(f"{py_func.__name__} is not a plain function")
        globals_ = dict(py_func.__globals__)
        if py_func.__closure__:
            for name, cell in zip(py_func.__code__.co_freevars, py_func.__closure__):
                globals_[name] = cell.cell_contents
        _PARSED[py_func] = (fndef, globals_)
    return _PARSED[py_func]
