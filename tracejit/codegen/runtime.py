"""Scalar helpers that generated kernels call where Numba's own operator differs from NumPy's.

Each one pins down one NumPy behaviour: integer floor division and remainder by zero give 0 and
``INT_MIN // -1`` wraps (Numba gives 0); float -> int conversion of NaN or out-of-range values
gives INT_MIN like NumPy on x86 (LLVM leaves it undefined); integer powers wrap.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@njit(inline="always")
def ifloordiv(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b


@njit(inline="always")
def iremainder(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b


@njit
def ipow(a, b):
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    result = a - a + 1
    while b > 0:
        if b & 1:
            result = result * a
        a = a * a
        b >>= 1
    return result


@njit(inline="always")
def f2i64(x):
    if x >= -9.223372036854775808e18 and x < 9.223372036854775808e18:
        return np.int64(x)
    return np.int64(-9223372036854775807 - 1)


@njit(inline="always")
def f2i32(x):
    if x >= -2147483648.0 and x < 2147483648.0:
        return np.int32(x)
    return np.int32(-2147483648)


# -- allocation --------------------------------------------------------------------------------
# Numba's np.empty takes memory without asking for huge pages, so first touching a large buffer
# costs a page fault every 4 KiB (measured: 17 ms of faults for a 40 MB buffer, 4x the compute
# of an elementwise kernel). NumPy's allocator asks the kernel for transparent huge pages with
# madvise(MADV_HUGEPAGE); generated code does the same for large buffers.

_HUGE = 1 << 21               # 2 MiB, the x86-64 huge page
_MADV_HUGEPAGE = 14
_ADVISE_MIN_BYTES = 1 << 22   # below 4 MiB the faults are cheap and the syscall is not


@intrinsic
def _madvise(typingctx, addr, length, advice):
    """madvise(2) called by symbol name, so kernels that use it stay cacheable on disk."""
    sig = types.int32(types.intp, types.intp, types.int32)

    def codegen(context, builder, signature, args):
        i8p = llvm_ir.IntType(8).as_pointer()
        fnty = llvm_ir.FunctionType(llvm_ir.IntType(32), [i8p, llvm_ir.IntType(64),
                                                          llvm_ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        return builder.call(fn, [builder.inttoptr(args[0], i8p), args[1], args[2]])

    return sig, codegen


@njit(inline="always")
def advise_huge_pages(buf):
    nbytes = buf.size * buf.itemsize
    if nbytes >= _ADVISE_MIN_BYTES:
        addr = np.intp(buf.ctypes.data)
        start = (addr + (_HUGE - 1)) & ~np.intp(_HUGE - 1)
        end = (addr + nbytes) & ~np.intp(_HUGE - 1)
        if end > start:
            _madvise(start, end - start, np.int32(_MADV_HUGEPAGE))
    return buf
