"""What the direct compiler computes with: typed scalar values, arrays as data pointer plus
shape and strides, tuples, and Numba's conversion rules between scalar types.

Types are Numba's own type objects (``types.float32``, ``types.Array``), so that the typing
of operators can be asked of Numba's typing context (lower.py) and the results agree with
what Numba would have compiled from the same kernel source.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from numba import types

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()


class Unsupported(Exception):
    """The kernel uses something the direct compiler does not implement: Numba compiles it."""


def llvm_type(t):
    """The LLVM type of a scalar value of Numba type ``t`` (bool as i1, as Numba's values)."""
    if t == types.boolean:
        return I1
    if isinstance(t, types.Integer):
        return ir.IntType(t.bitwidth)
    if t == types.float32:
        return F32
    if t == types.float64:
        return F64
    if isinstance(t, types.BaseTuple):
        return ir.LiteralStructType([array_struct(e) if isinstance(e, types.Array)
                                     else llvm_type(e) for e in t.types])
    if isinstance(t, types.CPointer):
        return storage_type(t.dtype).as_pointer()
    raise Unsupported(f"no scalar type for {t}")


def storage_type(t):
    """The LLVM type of an array element of type ``t`` (bool as a byte, as Numba stores it)."""
    return I8 if t == types.boolean else llvm_type(t)


def array_struct(t: types.Array):
    """Numba's value type of an array argument: what its C wrapper takes (handoff.py calls
    kernels by that wrapper's address)."""
    return ir.LiteralStructType([I8.as_pointer(), I8.as_pointer(), I64, I64,
                                 storage_type(t.dtype).as_pointer(),
                                 ir.ArrayType(I64, t.ndim), ir.ArrayType(I64, t.ndim)])


@dataclass
class Val:
    """A scalar (or tuple) value and its Numba type."""
    type: object
    value: object


@dataclass
class ArrayVal:
    """An array: element pointer, shape and byte strides as i64 values; ``layout`` is
    Numba's ("C", "F" or "A"), which decides how an index becomes an address."""
    type: types.Array
    data: object
    shape: list
    strides: list

    @property
    def dtype(self):
        return self.type.dtype


class Global:
    """A Python object named in the source (a module, a function, a dtype)."""

    def __init__(self, obj):
        self.obj = obj


class Method:
    def __init__(self, array: ArrayVal, name: str):
        self.array, self.name = array, name


def is_int(t) -> bool:
    return isinstance(t, types.Integer)


def is_float(t) -> bool:
    return t in (types.float32, types.float64)


def cast(b: ir.IRBuilder, v: Val, to) -> Val:
    """``v`` converted to type ``to`` as Numba converts (truncating float -> int; bools are
    0 or 1; an int or float is true when nonzero)."""
    src = v.type
    if src == to or (isinstance(src, types.Literal) and src.literal_type == to):
        return Val(to, v.value)
    x = v.value
    if isinstance(to, types.BaseTuple) or isinstance(src, types.BaseTuple):
        return _cast_tuple(b, v, to)
    if to == types.boolean:
        if is_int(src):
            return Val(to, b.icmp_unsigned("!=", x, x.type(0)))
        if is_float(src):
            return Val(to, b.fcmp_unordered("!=", x, x.type(0)))
    if src == types.boolean:
        if is_int(to):
            return Val(to, b.zext(x, llvm_type(to)))
        if is_float(to):
            return Val(to, b.uitofp(x, llvm_type(to)))
    if is_int(src) and is_int(to):
        if to.bitwidth < src.bitwidth:
            return Val(to, b.trunc(x, llvm_type(to)))
        if to.bitwidth > src.bitwidth:
            ext = b.sext if src.signed else b.zext
            return Val(to, ext(x, llvm_type(to)))
        return Val(to, x)
    if is_int(src) and is_float(to):
        conv = b.sitofp if src.signed else b.uitofp
        return Val(to, conv(x, llvm_type(to)))
    if is_float(src) and is_int(to):
        conv = b.fptosi if to.signed else b.fptoui
        return Val(to, conv(x, llvm_type(to)))
    if is_float(src) and is_float(to):
        if to.bitwidth < src.bitwidth:
            return Val(to, b.fptrunc(x, llvm_type(to)))
        return Val(to, b.fpext(x, llvm_type(to)))
    raise Unsupported(f"no conversion from {src} to {to}")


def _cast_tuple(b, v: Val, to) -> Val:
    if not (isinstance(to, types.BaseTuple) and isinstance(v.type, types.BaseTuple)
            and len(to.types) == len(v.type.types)):
        raise Unsupported(f"no conversion from {v.type} to {to}")
    out = ir.Constant(llvm_type(to), ir.Undefined)
    for k, (s, d) in enumerate(zip(v.type.types, to.types)):
        item = cast(b, Val(s, b.extract_value(v.value, k)), d)
        out = b.insert_value(out, item.value, k)
    return Val(to, out)


def truth(b: ir.IRBuilder, v: Val):
    """The i1 truth value of a scalar, as ``if v:`` sees it."""
    return cast(b, v, types.boolean).value


def constant(t, x) -> Val:
    """A Python or NumPy constant as a Val of Numba type ``t``."""
    if t == types.boolean:
        return Val(t, I1(int(bool(x))))
    if is_int(t):
        n, bits = int(x), t.bitwidth
        n = n & ((1 << bits) - 1)
        return Val(t, llvm_type(t)(n - (1 << bits) if n >> (bits - 1) else n))
    if is_float(t):
        return Val(t, llvm_type(t)(float(x)))
    if isinstance(t, types.BaseTuple):
        items = [constant(e, xe) for e, xe in zip(t.types, x)]
        return Val(t, ir.Constant(llvm_type(t), [i.value for i in items]))
    raise Unsupported(f"no constant of type {t}")
