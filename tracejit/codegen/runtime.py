"""Scalar helpers that generated kernels call where Numba's own operator differs from NumPy's.

Each one pins down one NumPy behaviour: integer floor division and remainder by zero give 0 and
``INT_MIN // -1`` wraps (Numba gives 0); float -> int conversion of NaN or out-of-range values
gives INT_MIN like NumPy on x86 (LLVM leaves it undefined); integer powers wrap.
"""
from __future__ import annotations

import numpy as np
from numba import njit


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
