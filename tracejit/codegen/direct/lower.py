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
"""
from __future__ import annotations

import ast
import inspect
import operator
import textwrap

import numpy as np
from llvmlite import ir
from numba import types
from numba.core.caching import NullCache
from numba.core.dispatcher import Dispatcher
from numba.core.extending import _Intrinsic

from . import calls
from .numba_typing import resolve, typeof_constant, unify
from .values import (I1, I64, ArrayVal, Global, Method, Unsupported, Val, array_struct, cast,
                     constant, is_float, is_int, llvm_type, storage_type, truth)

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}
# operators that are one LLVM instruction once the operands have their common type
_FLOAT_OPS = {operator.add: "fadd", operator.sub: "fsub", operator.mul: "fmul",
              operator.truediv: "fdiv"}
_INT_OPS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul",
            operator.and_: "and_", operator.or_: "or_", operator.xor: "xor"}
_ICMP = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
         operator.eq: "==", operator.ne: "!="}

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
        self.once = _assigned_once_at_top(fndef)
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


class FunctionLowerer:
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

    # -- statements ------------------------------------------------------------------------
    def statements(self, body):
        for st in body:
            if self.b.block.is_terminated:
                return                           # code after return / break / raise
            self.statement(st)

    def statement(self, st):
        f, b = self.frame, self.b
        if isinstance(st, ast.Assign):
            v = self.expr(st.value)
            for target in st.targets:
                self.store_to(target, v)
        elif isinstance(st, ast.AugAssign):
            op = _BINOPS.get(type(st.op))
            if op is None:
                raise Unsupported("augmented assignment")
            if isinstance(st.target, ast.Name):
                cur = self.read(f, st.target.id)
            elif isinstance(st.target, ast.Subscript):
                cur = self.expr(st.target)
            else:
                raise Unsupported("augmented assignment target")
            self.store_to(st.target, self.binop(op, cur, self.expr(st.value)))
        elif isinstance(st, ast.Expr):
            if isinstance(st.value, ast.Constant):
                return                           # a docstring
            self.expr(st.value)
        elif isinstance(st, ast.If):
            self.if_statement(st)
        elif isinstance(st, ast.For):
            self.for_range(st)
        elif isinstance(st, ast.While):
            self.while_loop(st)
        elif isinstance(st, ast.Return):
            self.return_statement(st)
        elif isinstance(st, ast.Raise):
            self.raise_statement(st)
        elif isinstance(st, ast.Pass):
            pass
        elif isinstance(st, ast.Break):
            if not f.loops:
                raise Unsupported("break outside a loop")
            b.branch(f.loops[-1][1])
        elif isinstance(st, ast.Continue):
            if not f.loops:
                raise Unsupported("continue outside a loop")
            b.branch(f.loops[-1][0])
        else:
            raise Unsupported(type(st).__name__)

    def store_to(self, target, v):
        if isinstance(target, ast.Name):
            self.assign(self.frame, target.id, v)
        elif isinstance(target, ast.Tuple):
            items = self.unpack(v, len(target.elts))
            for t, item in zip(target.elts, items):
                self.store_to(t, item)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            if not isinstance(base, ArrayVal):
                raise Unsupported("item assignment to a non-array")
            self.setitem(base, target.slice, v)
        else:
            raise Unsupported("assignment target")

    def unpack(self, v, n: int) -> list:
        if not (isinstance(v, Val) and isinstance(v.type, types.BaseTuple)
                and len(v.type.types) == n):
            raise Unsupported("unpacking")
        return [self.item(v, k) for k in range(n)]

    def item(self, v: Val, k: int):
        """Item ``k`` of a tuple: a scalar, or an array from its struct."""
        t, x = v.type.types[k], self.b.extract_value(v.value, k)
        if isinstance(t, types.Array):
            return ArrayVal(t, self.b.extract_value(x, 4),
                            [self.b.extract_value(x, (5, d)) for d in range(t.ndim)],
                            [self.b.extract_value(x, (6, d)) for d in range(t.ndim)])
        return Val(t, x)

    def if_statement(self, st: ast.If):
        cond = truth(self.b, self.scalar(self.expr(st.test)))
        then = self.fn.append_basic_block("then")
        other = self.fn.append_basic_block("else")
        after = self.fn.append_basic_block("endif")
        self.b.cbranch(cond, then, other)
        for block, body in ((then, st.body), (other, st.orelse)):
            self.b.position_at_end(block)
            self.statements(body)
            if not self.b.block.is_terminated:
                self.b.branch(after)
        self.b.position_at_end(after)

    def for_range(self, st: ast.For):
        it = st.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3
                and isinstance(st.target, ast.Name) and not st.orelse
                and self.read(self.frame, "range").obj is range):
            raise Unsupported("a for loop other than over range()")
        args = [self.scalar(self.expr(a)) for a in it.args]
        if not all(is_int(a.type) for a in args):
            raise Unsupported("range of non-integers")
        step = 1
        if len(args) == 3:
            node = it.args[2]
            if not (isinstance(node, ast.Constant) and isinstance(node.value, int)
                    and node.value != 0):
                raise Unsupported("range with a step that is not a nonzero constant")
            step = node.value
        start, stop = (args[0], args[1]) if len(args) >= 2 else (constant(types.int64, 0),
                                                                  args[0])
        start, stop = cast(self.b, start, types.int64), cast(self.b, stop, types.int64)
        counter = self.alloca_builder.alloca(I64, name="range")
        self.b.store(start.value, counter)
        cond_bb = self.fn.append_basic_block("for.cond")
        body_bb = self.fn.append_basic_block("for.body")
        next_bb = self.fn.append_basic_block("for.next")
        end_bb = self.fn.append_basic_block("for.end")
        self.b.branch(cond_bb)
        self.b.position_at_end(cond_bb)
        i = self.b.load(counter)
        self.b.cbranch(self.b.icmp_signed("<" if step > 0 else ">", i, stop.value),
                       body_bb, end_bb)
        self.b.position_at_end(body_bb)
        self.assign(self.frame, st.target.id, Val(types.int64, i))
        self.loop_body(st.body, next_bb, end_bb)
        self.b.position_at_end(next_bb)
        self.b.store(self.b.add(self.b.load(counter), I64(step)), counter)
        self.b.branch(cond_bb)
        self.b.position_at_end(end_bb)

    def while_loop(self, st: ast.While):
        if st.orelse:
            raise Unsupported("while ... else")
        cond_bb = self.fn.append_basic_block("while.cond")
        body_bb = self.fn.append_basic_block("while.body")
        end_bb = self.fn.append_basic_block("while.end")
        self.b.branch(cond_bb)
        self.b.position_at_end(cond_bb)
        self.b.cbranch(truth(self.b, self.scalar(self.expr(st.test))), body_bb, end_bb)
        self.b.position_at_end(body_bb)
        self.loop_body(st.body, cond_bb, end_bb)
        self.b.position_at_end(end_bb)

    def loop_body(self, body, next_bb, end_bb):
        """A loop's statements: ``continue`` goes to ``next_bb``, ``break`` to ``end_bb``."""
        self.frame.loops.append((next_bb, end_bb))
        self.loop_depth += 1
        self.statements(body)
        self.loop_depth -= 1
        self.frame.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(next_bb)

    def return_statement(self, st: ast.Return):
        f = self.frame
        if f.ret_block is None:
            # The kernel itself returns an int64: 0 from generated kernels, whose nonzero
            # returns are the codes of the exceptions they raise; any value from one that
            # raises nothing (the hand-off's runtime, handoff.py)
            v = (self.scalar(self.expr(st.value)) if st.value is not None
                 else constant(types.int64, 0))
            if not (isinstance(v, Val) and (is_int(v.type) or v.type == types.boolean)):
                raise Unsupported("a kernel that returns no integer")
            if not (st.value is None or isinstance(st.value, ast.Constant)
                    and st.value.value == 0):
                self.returns_values = True
            self.finish(cast(self.b, v, types.int64).value)
            return
        if st.value is not None:
            v = self.expr(st.value)
            if isinstance(v, Global):
                raise Unsupported("returning an object from a helper")
            self.assign(f, "$ret", v)
            f.ret_var = True
        self.b.branch(f.ret_block)

    def raise_statement(self, st: ast.Raise):
        exc = st.exc
        if not (isinstance(exc, ast.Call) and len(exc.args) == 1 and not exc.keywords
                and isinstance(exc.args[0], ast.Constant)
                and isinstance(exc.args[0].value, str)):
            raise Unsupported("raise other than Exception('message')")
        cls = self.expr(exc.func)
        if not (isinstance(cls, Global) and isinstance(cls.obj, type)
                and issubclass(cls.obj, Exception)):
            raise Unsupported("raise of a non-exception")
        self.errors.append((cls.obj, exc.args[0].value))
        self.finish(I64(len(self.errors)))

    # -- expressions -----------------------------------------------------------------------
    def scalar(self, v) -> Val:
        if isinstance(v, Global):
            v = python_value(v.obj)
        if not isinstance(v, Val):
            raise Unsupported("an array where a scalar is expected")
        return v

    def expr(self, e):
        f = self.frame
        if isinstance(e, ast.Constant):
            if isinstance(e.value, (str, type(None))):
                return Global(e.value)
            return constant(typeof_constant(e.value), e.value)
        if isinstance(e, ast.Name):
            return self.read(f, e.id)
        if isinstance(e, ast.Attribute):
            return self.attribute(self.expr(e.value), e.attr)
        if isinstance(e, ast.BinOp):
            op = _BINOPS.get(type(e.op))
            if op is None:
                raise Unsupported("operator")
            return self.binop(op, self.expr(e.left), self.expr(e.right))
        if isinstance(e, ast.UnaryOp):
            return self.unaryop(e.op, self.scalar(self.expr(e.operand)))
        if isinstance(e, ast.Compare):
            return self.compare(e)
        if isinstance(e, ast.BoolOp):
            return self.boolop(e)
        if isinstance(e, ast.IfExp):
            return self.ifexp(e)
        if isinstance(e, ast.Call):
            if e.keywords:
                raise Unsupported("keyword arguments")
            fn = self.expr(e.func)
            return self.call(fn, [self.expr(a) for a in e.args])
        if isinstance(e, ast.Subscript):
            base = self.expr(e.value)
            if isinstance(base, ArrayVal):
                return self.getitem(base, e.slice)
            base = self.scalar(base)
            if isinstance(base.type, types.BaseTuple):
                return self.item(base, _constant_index(e.slice, len(base.type.types)))
            raise Unsupported("subscript of a scalar")
        if isinstance(e, ast.Tuple):
            return self.tuple_of([self.argument(self.expr(x)) for x in e.elts])
        raise Unsupported(type(e).__name__)

    def tuple_of(self, items: list) -> Val:
        """A tuple of scalars, or of arrays as Numba's array structs (what ``call_address``
        passes on to a kernel)."""
        t = types.BaseTuple.from_types([i.type for i in items])
        out = ir.Constant(llvm_type(t), ir.Undefined)
        for k, i in enumerate(items):
            value = calls.array_struct_value(self.b, i) if isinstance(i, ArrayVal) else i.value
            out = self.b.insert_value(out, value, k)
        return Val(t, out)

    def attribute(self, base, name: str):
        if isinstance(base, Global):
            try:
                return global_value(getattr(base.obj, name))
            except AttributeError:
                raise Unsupported(f"attribute {name}") from None
        if isinstance(base, ArrayVal):
            return calls.array_attribute(self, base, name)
        if isinstance(base, Method):
            return calls.ctypes_attribute(self, base, name)
        raise Unsupported(f"attribute {name} of a scalar")

    def binop(self, op, x, y) -> Val:
        x, y = self.scalar(x), self.scalar(y)
        sig = resolve(op, (x.type, y.type))
        b = self.b
        x, y = cast(b, x, sig.args[0]), cast(b, y, sig.args[1])
        t, rt = sig.args[0], sig.return_type
        if op is operator.truediv and is_float(rt) and not is_float(t):
            x, y, t = cast(b, x, rt), cast(b, y, rt), rt        # int / int: in float64
        fm = ("contract",) if self.frame.fastmath else ()
        a, c = x.value, y.value
        if is_float(t):
            if op in _FLOAT_OPS:
                return Val(rt, getattr(b, _FLOAT_OPS[op])(a, c, flags=fm))
            if op is operator.pow and sig.args[1] == t:
                return Val(rt, calls.intrinsic_call(b, "llvm.pow", t, [a, c]))
            if op in (operator.floordiv, operator.mod) and rt == t:
                return Val(rt, calls.float_divide(b, op is operator.mod, a, c))
            raise Unsupported(f"float {op.__name__}")
        if op in (operator.lshift, operator.rshift) and is_int(rt):
            # Numba shifts in the result's type, whatever the amount's
            a, c = cast(b, x, rt).value, cast(b, y, rt).value
            if op is operator.lshift:
                return Val(rt, b.shl(a, c))
            return Val(rt, (b.ashr if rt.signed else b.lshr)(a, c))
        if is_int(t) and is_int(sig.args[1]) and is_int(rt) and t != sig.args[1]:
            a, c, t = cast(b, x, rt).value, cast(b, y, rt).value, rt    # int64 with uint64
        if not (is_int(t) or t == types.boolean) or t != sig.args[1]:
            raise Unsupported(f"{op.__name__} on {sig.args}")
        if op in _INT_OPS:
            return Val(rt, getattr(b, _INT_OPS[op])(a, c))
        if op in (operator.floordiv, operator.mod):
            return Val(rt, calls.int_divide(b, op is operator.mod, a, c, is_int(t) and t.signed))
        raise Unsupported(f"integer {op.__name__}")

    def unaryop(self, op, x: Val) -> Val:
        b = self.b
        if isinstance(op, ast.Not):
            return Val(types.boolean, b.not_(truth(b, x)))
        if isinstance(op, ast.UAdd):
            return x
        fn = operator.neg if isinstance(op, ast.USub) else operator.invert
        sig = resolve(fn, (x.type,))
        x = cast(b, x, sig.args[0])
        if fn is operator.neg:
            if is_float(x.type):
                return Val(sig.return_type, b.fneg(x.value))
            return cast(b, Val(x.type, b.neg(x.value)), sig.return_type)
        return cast(b, Val(x.type, b.not_(x.value)), sig.return_type)

    def compare(self, e: ast.Compare) -> Val:
        left = self.scalar(self.expr(e.left))
        result = None
        for opnode, right_node in zip(e.ops, e.comparators):
            op = _CMPOPS.get(type(opnode))
            if op is None:
                raise Unsupported("comparison")
            right = self.scalar(self.expr(right_node))
            c = self.compare_values(op, left, right)
            result = c if result is None else self.b.and_(result, c)
            left = right
        return Val(types.boolean, result)

    def compare_values(self, op, x: Val, y: Val):
        sig = resolve(op, (x.type, y.type))
        b = self.b
        x, y = cast(b, x, sig.args[0]), cast(b, y, sig.args[1])
        t = sig.args[0]
        if is_float(t):
            if op is operator.ne:
                return b.fcmp_unordered("!=", x.value, y.value)
            return b.fcmp_ordered(_ICMP[op], x.value, y.value)
        if t == types.boolean or (is_int(t) and not t.signed):
            return b.icmp_unsigned(_ICMP[op], x.value, y.value)
        if is_int(t):
            return b.icmp_signed(_ICMP[op], x.value, y.value)
        raise Unsupported(f"comparison of {t}")

    def boolop(self, e: ast.BoolOp) -> Val:
        """``a and b`` / ``a or b`` of booleans, short-circuited (the right side may read an
        array at an index the left side checks)."""
        b = self.b
        is_and = isinstance(e.op, ast.And)
        end = self.fn.append_basic_block("boolop.end")
        incoming = []
        for k, node in enumerate(e.values):
            v = self.scalar(self.expr(node))
            if v.type != types.boolean:
                raise Unsupported("and/or of non-booleans")
            incoming.append((v.value, b.block))
            if k == len(e.values) - 1:
                b.branch(end)
            else:
                nxt = self.fn.append_basic_block("boolop.next")
                if is_and:
                    b.cbranch(v.value, nxt, end)
                else:
                    b.cbranch(v.value, end, nxt)
                b.position_at_end(nxt)
        b.position_at_end(end)
        phi = b.phi(I1)
        for val, block in incoming:
            phi.add_incoming(val, block)
        return Val(types.boolean, phi)

    def ifexp(self, e: ast.IfExp) -> Val:
        """``a if c else b``: only the chosen side is computed (it may load from an array at
        an index the condition checks); LLVM makes a select of it where that is safe."""
        b = self.b
        cond = truth(b, self.scalar(self.expr(e.test)))
        then = self.fn.append_basic_block("ifexp.then")
        other = self.fn.append_basic_block("ifexp.else")
        end = self.fn.append_basic_block("ifexp.end")
        b.cbranch(cond, then, other)
        results = []
        for block, node in ((then, e.body), (other, e.orelse)):
            b.position_at_end(block)
            results.append(self.scalar(self.expr(node)))
            results[-1] = (results[-1], b.block)
        t = unify(results[0][0].type, results[1][0].type)
        vals = []
        for v, block in results:
            b.position_at_end(block)
            vals.append((cast(b, v, t).value, b.block))
            b.branch(end)
        b.position_at_end(end)
        phi = b.phi(llvm_type(t))
        for val, block in vals:
            phi.add_incoming(val, block)
        return Val(t, phi)

    # -- arrays ----------------------------------------------------------------------------
    def getitem(self, a: ArrayVal, index):
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        if any(isinstance(p, ast.Slice) for p in parts) or len(parts) < a.type.ndim:
            return calls.slice_view(self, a, parts)     # a view (a row of a matrix too)
        ptr = self.element_pointer(a, parts)
        return calls.load_element(self.b, a.dtype, ptr)

    def setitem(self, a: ArrayVal, index, v):
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        if any(isinstance(p, ast.Slice) for p in parts):
            calls.fill(self, calls.slice_view(self, a, parts), self.scalar(v))
            return
        if not a.type.mutable:
            raise Unsupported("store into a read-only array")
        ptr = self.element_pointer(a, parts)
        calls.store_element(self.b, a.dtype, ptr, cast(self.b, self.scalar(v), a.dtype))

    def element_pointer(self, a: ArrayVal, parts: list):
        if len(parts) != a.type.ndim:
            raise Unsupported("indexing with fewer or more indices than dimensions")
        idx = []
        for k, p in enumerate(parts):
            v = self.scalar(self.expr(p))
            if not is_int(v.type):
                raise Unsupported("a non-integer index")
            # Numba's wraparound: a negative signed index counts from the end
            wraps = v.type.signed and not (isinstance(p, ast.Constant) and p.value >= 0)
            v = cast(self.b, v, types.int64 if v.type.signed else types.uint64).value
            if wraps:
                neg = self.b.icmp_signed("<", v, I64(0))
                v = self.b.select(neg, self.b.add(v, a.shape[k]), v)
            idx.append(v)
        return calls.address(self.b, a, idx)

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


def _constant_index(node, n: int) -> int:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant):
        k = -node.operand.value
    elif isinstance(node, ast.Constant):
        k = node.value
    else:
        raise Unsupported("a tuple index that is not a constant")
    if not isinstance(k, int) or not -n <= k < n:
        raise Unsupported("tuple index out of range")
    return k % n


def _cached(dispatcher) -> bool:
    """Whether the helper is ``@njit(cache=True)``: compiled on its own, as a shared function."""
    return not isinstance(getattr(dispatcher, "_cache", None), (NullCache, type(None)))


def _fastmath_of(dispatcher, caller: bool) -> bool:
    """An ``inline="always"`` helper is compiled with its caller's flags (Numba inlines it
    before lowering); any other with its own."""
    opts = dispatcher.targetoptions
    if opts.get("inline") == "always":
        return caller
    fm = opts.get("fastmath")
    return bool(fm) and (fm is True or "contract" in fm)


_PARSED: dict = {}


def parsed(py_func):
    if py_func not in _PARSED:
        try:
            src = textwrap.dedent(inspect.getsource(py_func))
        except (OSError, TypeError):
            raise Unsupported(f"no source of {py_func.__name__}") from None
        fndef = ast.parse(src).body[0]
        if not isinstance(fndef, ast.FunctionDef):
            raise Unsupported(f"{py_func.__name__} is not a plain function")
        globals_ = dict(py_func.__globals__)
        if py_func.__closure__:
            for name, cell in zip(py_func.__code__.co_freevars, py_func.__closure__):
                globals_[name] = cell.cell_contents
        _PARSED[py_func] = (fndef, globals_)
    return _PARSED[py_func]


def python_value(x) -> Val:
    """A Python or NumPy number (or tuple of them) named in the source, as a constant."""
    return constant(typeof_constant(x), x)


def global_value(x):
    if isinstance(x, (bool, int, float, np.generic)) or (
            isinstance(x, tuple) and x and all(isinstance(e, (bool, int, float, np.generic))
                                               for e in x)):
        return python_value(x)
    return Global(x)

