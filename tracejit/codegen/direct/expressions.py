"""The expressions of the kernel language, lowered to LLVM IR: operators typed by Numba's
typing context, short-circuit ``and``/``or`` and ``x if c else y`` as real branches, tuples,
and array element access. A mixin of lower.py's FunctionLowerer."""
from __future__ import annotations

import ast
import operator

import numpy as np
from llvmlite import ir
from numba import types

from . import calls
from .numba_typing import resolve, typeof_constant, unify
from .values import (I1, I64, ArrayVal, Global, Method, Unsupported, Val, cast, constant,
                     is_float, is_int, llvm_type, truth)

BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
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
_NSW = (operator.add, operator.sub, operator.mul)
_ICMP = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
         operator.eq: "==", operator.ne: "!="}


class Expressions:
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
            op = BINOPS.get(type(e.op))
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
            # Numba's flags: a signed add, sub or mul does not overflow ("nsw"), which lets
            # LLVM drop the wraparound of an index it knows is non-negative (i + lo, lo >= 0)
            flags = ("nsw",) if op in _NSW and is_int(rt) and rt.signed else ()
            return Val(rt, getattr(b, _INT_OPS[op])(a, c, flags=flags))
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


def python_value(x) -> Val:
    """A Python or NumPy number (or tuple of them) named in the source, as a constant."""
    return constant(typeof_constant(x), x)


def global_value(x):
    if isinstance(x, (bool, int, float, np.generic)) or (
            isinstance(x, tuple) and x and all(isinstance(e, (bool, int, float, np.generic))
                                               for e in x)):
        return python_value(x)
    return Global(x)
