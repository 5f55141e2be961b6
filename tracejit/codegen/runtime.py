"""Scalar helpers that generated kernels call where Numba's own operator differs from NumPy's.

Each one pins down one NumPy behaviour: integer floor division, remainder and fmod by zero give 0 and
``INT_MIN // -1`` wraps (Numba gives 0); float -> int conversion of NaN or out-of-range values
gives INT_MIN like NumPy on x86 (LLVM leaves it undefined); integer powers wrap; int64 + - *
wrap (``wadd``, ``wsub``, ``wmul``).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic


def _wrapping(name: str):
    """int64 ``a <name> b`` that wraps like NumPy. Numba marks signed + - * "nsw" (overflow
    undefined, for its index arithmetic), and LLVM then folds ``x + 1 > x`` to True and
    ``bool(x * x)`` to ``x != 0``, where NumPy's int64 wraps (INT64_MAX + 1 is INT64_MIN)."""
    @intrinsic
    def op(typingctx, a, b):
        if a != types.int64 or b != types.int64:
            return None

        def codegen(context, builder, signature, args):
            return getattr(builder, name)(*args)
        return types.int64(types.int64, types.int64), codegen
    op.__name__ = f"w{name}"
    return op


wadd, wsub, wmul = _wrapping("add"), _wrapping("sub"), _wrapping("mul")


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


@njit(inline="always")
def ifmod(a, b):
    """C's ``%`` (NumPy's np.fmod on ints): the sign of ``a``; 0 for a zero divisor."""
    if b == 0 or b == -1:
        return a - a
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


@njit(inline="always")
def logaddexp64(x, y):
    """NumPy's npy_logaddexp: exact at equal operands (infinities too), NaN-propagating."""
    if x == y:
        return x + 0.6931471805599453
    t = x - y
    if t > 0:
        return x + np.log1p(np.exp(-t))
    if t <= 0:
        return y + np.log1p(np.exp(t))
    return t


@njit(inline="always")
def logaddexp32(x, y):
    """npy_logaddexpf: logaddexp64 in float32 arithmetic."""
    if x == y:
        return x + np.float32(0.6931471805599453)
    t = x - y
    if t > 0:
        return x + np.float32(np.log1p(np.float32(np.exp(-t))))
    if t <= 0:
        return y + np.float32(np.log1p(np.float32(np.exp(t))))
    return t


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


@njit(inline="always")
def f2u64(x):
    """float -> uint64: exact in [0, 2**64); elsewhere as through int64 (no LLVM poison)."""
    if x >= 0.0 and x < 1.8446744073709551616e19:
        return np.uint64(x)
    return np.uint64(f2i64(x))


# -- allocation --------------------------------------------------------------------------------
# First touching a large fresh buffer costs a page fault every 4 KiB; the arena (arena.py) asks
# the kernel for transparent huge pages with madvise(MADV_HUGEPAGE) once per block.

HUGE_PAGE = 1 << 21           # 2 MiB, the x86-64 huge page
MADV_HUGEPAGE = 14
ADVISE_MIN_BYTES = 1 << 22    # below 4 MiB the faults are cheap and the syscall is not
