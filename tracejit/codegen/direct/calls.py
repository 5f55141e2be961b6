"""What a kernel calls and does with arrays, for the direct compiler (lower.py): casts, math
functions, NumPy allocation, array attributes, views and element access, and Numba
``@intrinsic`` helpers run on our builder.

Math functions follow Numba's lowering: LLVM's intrinsics where Numba uses them (exp, log,
sqrt, floor, ...) and the C library's functions otherwise (tanh, log1p, erf, ...), with the
argument and result types Numba's typing gives.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.np.numpy_support import from_dtype

from .math_functions import INTRINSIC_UNARY, LIBM_BINARY, LIBM_UNARY
from .numba_typing import resolve, unify, unprepared_typing_context
from .values import (F32, F64, I8, I32, I64, ArrayVal, Global, Method, Unsupported, Val, cast,
                     array_struct, constant, is_float, is_int, llvm_type, storage_type)

# -- element access --------------------------------------------------------------------------


def address(b: ir.IRBuilder, a: ArrayVal, idx: list):
    """The address of ``a[idx]`` (non-negative i64 indices), as Numba computes it: from the
    shape for C and F layouts (LLVM sees unit steps and vectorizes), from strides otherwise."""
    layout = a.type.layout
    if not idx:
        return a.data
    if layout in "CF":
        order = range(len(idx)) if layout == "C" else reversed(range(len(idx)))
        linear = None
        for k in order:
            linear = idx[k] if linear is None else b.add(b.mul(linear, a.shape[k]), idx[k])
        return b.gep(a.data, [linear], inbounds=True)
    offset = None
    for k, i in enumerate(idx):
        term = b.mul(i, a.strides[k])
        offset = term if offset is None else b.add(offset, term)
    raw = b.gep(b.bitcast(a.data, I8.as_pointer()), [offset], inbounds=True)
    return b.bitcast(raw, a.data.type)


def load_element(b, dtype, ptr) -> Val:
    v = b.load(ptr)
    if dtype == types.boolean:
        v = b.icmp_unsigned("!=", v, I8(0))
    return Val(dtype, v)


def store_element(b, dtype, ptr, v: Val):
    x = v.value
    if dtype == types.boolean:
        x = b.zext(x, I8)
    b.store(x, ptr)


def array_struct_value(b, a: ArrayVal):
    """``a`` as Numba's array struct (no meminfo, no parent): how kernels take arrays."""
    st = array_struct(a.type)
    v = ir.Constant(st, None)
    n = I64(1)
    for k in range(a.type.ndim):
        n = b.mul(n, a.shape[k])
        v = b.insert_value(v, a.shape[k], (5, k))
        v = b.insert_value(v, a.strides[k], (6, k))
    v = b.insert_value(v, n, 2)
    v = b.insert_value(v, I64(_itemsize(a.dtype)), 3)
    return b.insert_value(v, a.data, 4)


def _strides_c(b, shape: list, itemsize: int) -> list:
    strides, step = [], I64(itemsize)
    for n in reversed(shape):
        strides.append(step)
        step = b.mul(step, n)
    return strides[::-1]


def _itemsize(dtype) -> int:
    return 1 if dtype == types.boolean else dtype.bitwidth // 8


# -- array attributes and methods --------------------------------------------------------------

def array_attribute(low, a: ArrayVal, name: str):
    b = low.b
    if name == "T":
        layout = {"C": "F", "F": "C"}.get(a.type.layout, "A")
        return ArrayVal(a.type.copy(layout=layout), a.data, a.shape[::-1], a.strides[::-1])
    if name in ("shape", "strides"):
        return low.tuple_of([Val(types.int64, v) for v in getattr(a, name)])
    if name == "itemsize":
        return constant(types.int64, _itemsize(a.dtype))
    if name == "ndim":
        return constant(types.int64, a.type.ndim)
    if name == "size":
        n = I64(1)
        for s in a.shape:
            n = b.mul(n, s)
        return Val(types.int64, n)
    if name in ("reshape", "ravel"):
        return Method(a, name)
    if name == "dtype":
        return Global(np.dtype(str(a.dtype) if a.dtype != types.boolean else "bool"))
    if name == "ctypes":
        return Method(a, name)        # only for ``.ctypes.data``
    raise Unsupported(f"array attribute {name}")


def ctypes_attribute(low, m, name: str) -> Val:
    """``a.ctypes.data``: the address of the array's data, as Numba types it (uintp)."""
    if m.name != "ctypes" or name != "data":
        raise Unsupported(f"attribute {name}")
    return Val(types.uintp, low.b.ptrtoint(m.array.data, I64))


def array_method(low, m, args: list):
    a = m.array
    if m.name == "reshape":
        if len(args) == 1 and isinstance(args[0], Val) and isinstance(args[0].type,
                                                                      types.BaseTuple):
            dims = low.unpack(args[0], len(args[0].type.types))
        else:
            dims = [low.scalar(x) for x in args]
        if a.type.layout != "C" or not all(is_int(d.type) for d in dims):
            raise Unsupported("reshape of a non-C-contiguous array")
        shape = [cast(low.b, d, types.int64).value for d in dims]
        return ArrayVal(types.Array(a.dtype, len(shape), "C", readonly=not a.type.mutable),
                        a.data, shape, _strides_c(low.b, shape, _itemsize(a.dtype)))
    if m.name == "ravel" and not args and a.type.layout == "C":
        n = I64(1)
        for d in a.shape:
            n = low.b.mul(n, d)
        return ArrayVal(types.Array(a.dtype, 1, "C", readonly=not a.type.mutable), a.data,
                        [n], [I64(_itemsize(a.dtype))])
    raise Unsupported(f"array method {m.name}")


def slice_view(low, a: ArrayVal, parts: list) -> ArrayVal:
    """``a[lo:hi, :]``-style views (integer indices drop a dimension; no steps)."""
    import ast
    b = low.b
    if len(parts) > a.type.ndim:
        raise Unsupported("too many indices")
    # Numba's layout rule: a C array stays C under integers on the left and at most one
    # slice (without a step), given last: x[t], x[lo:hi], x[t, lo:hi]
    keeps_c = a.type.layout == "C" and all(
        not isinstance(p, ast.Slice) or (k == len(parts) - 1 and p.step is None)
        for k, p in enumerate(parts))
    parts = list(parts) + [ast.Slice(None, None, None)] * (a.type.ndim - len(parts))
    offset, shape, strides, full = I64(0), [], [], True
    for k, p in enumerate(parts):
        n = a.shape[k]
        if isinstance(p, ast.Slice):
            if p.step is not None:
                raise Unsupported("a slice with a step")
            start = _bound(low, p.lower, n, I64(0))
            stop = _bound(low, p.upper, n, n)
            length = b.select(b.icmp_signed(">", stop, start), b.sub(stop, start), I64(0))
            full = full and p.lower is None and p.upper is None
            shape.append(length)
            strides.append(a.strides[k])
            offset = b.add(offset, b.mul(start, a.strides[k]))
        else:
            i = cast(b, low.scalar(low.expr(p)), types.int64).value
            i = b.select(b.icmp_signed("<", i, I64(0)), b.add(i, n), i)
            offset = b.add(offset, b.mul(i, a.strides[k]))
            full = False
    raw = b.gep(b.bitcast(a.data, I8.as_pointer()), [offset])
    layout = a.type.layout if full or keeps_c else "A"
    return ArrayVal(types.Array(a.dtype, len(shape), layout, readonly=not a.type.mutable),
                    b.bitcast(raw, a.data.type), shape, strides)


def _bound(low, node, n, default):
    """A slice bound as Python clamps it into [0, n]."""
    if node is None:
        return default
    b = low.b
    v = cast(b, low.scalar(low.expr(node)), types.int64).value
    v = b.select(b.icmp_signed("<", v, I64(0)), b.add(v, n), v)
    v = b.select(b.icmp_signed("<", v, I64(0)), I64(0), v)
    return b.select(b.icmp_signed(">", v, n), n, v)


def _nest(low, shape: list, body):
    """Loops over every index of ``shape`` (row-major), calling ``body(idx)`` innermost."""
    b = low.b
    idx = []

    def level(k):
        if k == len(shape):
            body(idx)
            return
        counter = low.alloca_builder.alloca(I64)
        b.store(I64(0), counter)
        cond = low.fn.append_basic_block("nest.cond")
        loop = low.fn.append_basic_block("nest.body")
        end = low.fn.append_basic_block("nest.end")
        b.branch(cond)
        b.position_at_end(cond)
        i = b.load(counter)
        b.cbranch(b.icmp_signed("<", i, shape[k]), loop, end)
        b.position_at_end(loop)
        idx.append(i)
        level(k + 1)
        idx.pop()
        b.store(b.add(b.load(counter), I64(1)), counter)
        b.branch(cond)
        b.position_at_end(end)
    level(0)


def fill(low, view: ArrayVal, v: Val):
    if not view.type.mutable:
        raise Unsupported("store into a read-only array")
    val = cast(low.b, v, view.dtype)
    _nest(low, view.shape, lambda idx: store_element(
        low.b, view.dtype, address(low.b, view, list(idx)), val))


def allocate(low, shape: list, dtype, zero: bool) -> ArrayVal:
    """A new C-contiguous array, freed when the kernel returns (so not inside a loop, where
    each pass would allocate again)."""
    if low.loop_depth:
        raise Unsupported("an array allocated inside a loop")
    b = low.b
    size = I64(_itemsize(dtype))
    for n in shape:
        size = b.mul(size, n)
    raw = _call_c(b, "malloc", I8.as_pointer(), [I64], [b.select(
        b.icmp_signed(">", size, I64(0)), size, I64(1))])
    if zero:
        cgutils.memset(b, raw, size, 0)
    slot = low.alloca_builder.alloca(I8.as_pointer())
    low.alloca_builder.store(ir.Constant(I8.as_pointer(), None), slot)
    b.store(raw, slot)
    low.allocations.append(slot)
    data = b.bitcast(raw, storage_type(dtype).as_pointer())
    return ArrayVal(types.Array(dtype, len(shape), "C"), data, shape,
                    _strides_c(b, shape, _itemsize(dtype)))


def free(b, ptr):
    _call_c(b, "free", ir.VoidType(), [I8.as_pointer()], [ptr])


def _shape_argument(low, v) -> list:
    if isinstance(v, Val) and isinstance(v.type, types.BaseTuple):
        items = low.unpack(v, len(v.type.types))
    else:
        items = [low.scalar(v)]
    if not all(is_int(i.type) for i in items):
        raise Unsupported("a shape of non-integers")
    return [cast(low.b, i, types.int64).value for i in items]


def _dtype_argument(v):
    if not isinstance(v, Global):
        raise Unsupported("a dtype that is not a NumPy type")
    try:
        return from_dtype(np.dtype(v.obj))
    except Exception:                        # noqa: BLE001
        raise Unsupported(f"dtype {v.obj!r}") from None


def contiguous(low, a: ArrayVal) -> ArrayVal:
    if a.type.layout == "C":
        return a
    out = allocate(low, a.shape, a.dtype, zero=False)
    b = low.b
    _nest(low, a.shape, lambda idx: b.store(b.load(address(b, a, list(idx))),
                                            address(b, out, list(idx))))
    return out


# -- builtins --------------------------------------------------------------------------------

_CASTS = {float: types.float64, int: types.int64, bool: types.boolean}


def builtin(low, obj, args: list):
    b = low.b
    if obj is range:
        raise Unsupported("range outside a for loop")
    if obj in (np.zeros, np.empty) and len(args) == 2:
        return allocate(low, _shape_argument(low, args[0]), _dtype_argument(args[1]),
                        zero=obj is np.zeros)
    if obj is np.ascontiguousarray and len(args) == 1 and isinstance(args[0], ArrayVal):
        return contiguous(low, args[0])
    if obj is len and len(args) == 1 and isinstance(args[0], ArrayVal) and args[0].shape:
        return Val(types.int64, args[0].shape[0])
    if obj is numba.carray and len(args) == 2:
        return _carray(low, low.scalar(args[0]), _shape_argument(low, args[1]))
    if any(isinstance(a, ArrayVal) for a in args):
        raise Unsupported(f"{getattr(obj, '__name__', obj)} of an array")
    vals = [low.scalar(a) for a in args]
    if isinstance(obj, type) and (obj in _CASTS or issubclass(obj, np.generic)) \
            and len(vals) == 1:
        to = _CASTS.get(obj) or from_dtype(np.dtype(obj))
        if to == types.boolean:
            return Val(to, cast(b, vals[0], to).value)
        return cast(b, vals[0], to)
    if obj in (max, min) and len(vals) == 2:
        return _minmax(low, obj, vals)
    if obj is abs and len(vals) == 1:
        return _abs(low, vals[0])
    name = getattr(obj, "__name__", None)
    if obj is getattr(math, name or "", None) or obj is getattr(np, name or "", None):
        return _math(low, obj, name, vals)
    raise Unsupported(f"call of {name or obj!r}")


def _carray(low, ptr: Val, shape: list) -> ArrayVal:
    """``numba.carray(pointer, shape)``: a C-contiguous array over memory at a pointer."""
    if not isinstance(ptr.type, types.CPointer):
        raise Unsupported("carray of a non-pointer")
    dtype = ptr.type.dtype
    return ArrayVal(types.Array(dtype, len(shape), "C"), ptr.value, shape,
                    _strides_c(low.b, shape, _itemsize(dtype)))


def _minmax(low, fn, vals):
    # (the unified type is Numba's result for integers; asking Numba's typing of max itself
    # compiles a Numba function, whose first compile in a process set up Numba's whole
    # compiler: 0.5-1 s)
    rt = unify(vals[0].type, vals[1].type)
    if not is_int(rt):
        raise Unsupported("max/min of floats")
    b = low.b
    x, y = (cast(b, v, rt).value for v in vals)
    op = ">=" if fn is max else "<="
    cmp = b.icmp_signed(op, x, y) if rt.signed else b.icmp_unsigned(op, x, y)
    return Val(rt, b.select(cmp, x, y))


def _abs(low, v: Val) -> Val:
    sig = resolve(abs, (v.type,))
    b = low.b
    x = cast(b, v, sig.args[0])
    if is_float(x.type):
        return Val(sig.return_type, intrinsic_call(b, "llvm.fabs", x.type, [x.value]))
    if is_int(x.type) and x.type.signed:
        neg = b.icmp_signed("<", x.value, x.value.type(0))
        return Val(sig.return_type, b.select(neg, b.neg(x.value), x.value))
    return cast(b, x, sig.return_type)


def _math(low, obj, name: str, vals: list) -> Val:
    b = low.b
    sig = resolve(obj, tuple(v.type for v in vals))
    xs = [cast(b, v, t) for v, t in zip(vals, sig.args)]
    rt = sig.return_type
    if name in ("isnan", "isinf", "isfinite") and is_float(xs[0].type):
        x = xs[0].value
        if name == "isnan":
            return Val(rt, b.fcmp_unordered("uno", x, x))
        inf = x.type(float("inf"))
        ax = intrinsic_call(b, "llvm.fabs", xs[0].type, [x])
        if name == "isinf":
            return Val(rt, b.fcmp_ordered("==", ax, inf))
        return Val(rt, b.fcmp_ordered("<", ax, inf))
    if name == "frexp" and xs[0].type == types.float64:
        exp = low.alloca_builder.alloca(I32)
        m = _call_c(b, "frexp", F64, [F64, I32.as_pointer()], [xs[0].value, exp])
        e = cast(b, Val(types.int32, b.load(exp)), rt.types[1])
        return low.tuple_of([Val(types.float64, m), e])
    if not (is_float(rt) and all(x.type == rt for x in xs)):
        raise Unsupported(f"{name}{sig.args} -> {rt}")
    args = [x.value for x in xs]
    if len(args) == 1 and name in INTRINSIC_UNARY:
        return Val(rt, intrinsic_call(b, f"llvm.{INTRINSIC_UNARY[name]}", rt, args))
    if len(args) == 1 and name in LIBM_UNARY:
        return Val(rt, _libm(b, LIBM_UNARY[name], rt, args))
    if len(args) == 2 and name in LIBM_BINARY:
        return Val(rt, _libm(b, LIBM_BINARY[name], rt, args))
    if len(args) == 2 and name == "copysign":
        return Val(rt, intrinsic_call(b, "llvm.copysign", rt, args))
    if len(args) == 2 and name in ("pow", "power"):
        return Val(rt, intrinsic_call(b, "llvm.pow", rt, args))
    if len(args) == 2 and name == "fmod":
        return Val(rt, b.frem(*args))
    raise Unsupported(f"math function {name}")


def intrinsic_call(b, name: str, t, args: list):
    lt = llvm_type(t)
    suffix = "f32" if lt == F32 else "f64"
    fn = cgutils.get_or_insert_function(b.module, ir.FunctionType(lt, [lt] * len(args)),
                                        f"{name}.{suffix}")
    return b.call(fn, args)


def _libm(b, name: str, t, args: list):
    lt = llvm_type(t)
    cname = name + ("f" if lt == F32 else "")
    return _call_c(b, cname, lt, [lt] * len(args), args)


def _call_c(b, name: str, ret, argtypes: list, args: list):
    fn = cgutils.get_or_insert_function(b.module, ir.FunctionType(ret, argtypes), name)
    return b.call(fn, args)


def int_divide(b, remainder: bool, x, y, signed: bool):
    """Python's ``//`` or ``%`` on integers (floor semantics); by zero gives 0 and
    ``MIN // -1`` wraps, never LLVM's undefined behaviour."""
    zero = x.type(0)
    is_zero = b.icmp_unsigned("==", y, zero)
    if not signed:
        safe = b.select(is_zero, x.type(1), y)
        r = b.urem(x, safe) if remainder else b.udiv(x, safe)
        return b.select(is_zero, zero, r)
    minus_one = b.icmp_signed("==", y, x.type(-1))
    safe = b.select(b.or_(is_zero, minus_one), x.type(1), y)
    q = b.sdiv(x, safe)
    r = b.srem(x, safe)
    # floor: adjust where the remainder is nonzero and its sign differs from the divisor's
    adjust = b.and_(b.icmp_signed("!=", r, zero),
                    b.icmp_signed("!=", b.icmp_signed("<", r, zero),
                                  b.icmp_signed("<", safe, zero)))
    if remainder:
        out = b.select(adjust, b.add(r, safe), r)
        return b.select(b.or_(is_zero, minus_one), zero, out)
    out = b.select(adjust, b.sub(q, x.type(1)), q)
    return b.select(is_zero, zero, b.select(minus_one, b.neg(x), out))


def float_divide(b, remainder: bool, x, y):
    """Python's ``//`` or ``%`` on floats, as Numba computes them (CPython's float_divmod:
    the remainder takes the divisor's sign, the quotient is snapped to an integer); by zero,
    IEEE's x / y and fmod (Numba's "numpy" error model). Selects only: every step is a
    float operation without side effects."""
    zero, one = x.type(0.0), x.type(1.0)
    mod = b.frem(x, y)
    div = b.fdiv(b.fsub(x, mod), y)
    mod_nonzero = b.fcmp_unordered("!=", mod, zero)
    y_negative = b.fcmp_ordered("<", y, zero)
    adjust = b.and_(mod_nonzero, b.icmp_unsigned("!=", y_negative,
                                                 b.fcmp_ordered("<", mod, zero)))
    div = b.select(adjust, b.fsub(div, one), div)
    if remainder:
        signed_zero = b.select(y_negative, x.type(-0.0), zero)
        out = b.select(mod_nonzero, b.select(adjust, b.fadd(mod, y), mod), signed_zero)
        by_zero = b.frem(x, y)
    else:
        floor = intrinsic_call(b, "llvm.floor", types.float32 if x.type == F32
                               else types.float64, [div])
        snapped = b.select(b.fcmp_ordered(">", b.fsub(div, floor), x.type(0.5)),
                           b.fadd(floor, one), floor)
        zero_quotient = b.fdiv(b.fmul(b.fmul(div, div), x), y)     # 0 with x / y's sign
        out = b.select(b.fcmp_ordered("!=", div, zero), snapped, zero_quotient)
        by_zero = b.fdiv(x, y)
    return b.select(b.fcmp_ordered("==", y, zero), by_zero, out)


# -- Numba intrinsics ------------------------------------------------------------------------

class IntrinsicContext:
    """The part of Numba's target context that the ``@intrinsic`` helpers of codegen/ use,
    so that their own code generators run on our builder (one definition of each)."""

    def __init__(self, low):
        self.low = low

    def codegen(self):
        return self

    def magic_tuple(self):
        return self.low.target

    def get_value_type(self, t):
        return array_struct(t) if isinstance(t, types.Array) else llvm_type(t)

    def get_dummy_value(self):
        return ir.Constant(I8.as_pointer(), None)

    def cast(self, builder, value, fromty, toty):
        return cast(builder, Val(fromty, value), toty).value

    def make_array(self, ty):
        return lambda context, builder, value: value        # an ArrayVal has .data

    def compile_internal(self, builder, py_func, sig, args):
        vals = [Val(t, v) for t, v in zip(sig.args, args)]
        out = self.low.inline(py_func, vals, fastmath=self.low.frame.fastmath)
        return cast(builder, out, sig.return_type).value


def intrinsic(low, intr, args: list):
    argtypes = [a.type for a in args]
    try:
        defn = intr._defn(unprepared_typing_context(), *argtypes)
    except Exception:                        # noqa: BLE001
        defn = None
    if defn is None:
        raise Unsupported(f"intrinsic {intr._name} on {argtypes}")
    sig, codegen = defn
    llargs = []
    for a, t in zip(args, sig.args):
        llargs.append(a if isinstance(a, ArrayVal) else cast(low.b, a, t).value)
    out = codegen(IntrinsicContext(low), low.b, sig, llargs)
    if sig.return_type == types.none:
        return Val(types.none, None)
    return Val(sig.return_type, out)

