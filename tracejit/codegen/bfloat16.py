"""bfloat16 in kernels: a bfloat16 is the upper half of a float32's bits, so kernels hold
bfloat16 arrays as uint16 and convert with integer operations (no CPU conversion instruction
is needed, and LLVM vectorizes them): a load shifts the bits into place, a store rounds to
nearest even by adding below the kept half, as ml_dtypes and PyTorch do. Like float16
(half.py), each op computes in float32 and rounds its bfloat16 result (``round_bf16``); the
registration is in representation.py."""
from __future__ import annotations

import numpy as np
from numba import njit

from .half import _add, _and, _or, _shl, _shr, _sub     # int32-lane bit operations
from .mathlib import bits_to_f32, f32_bits

_F32_INF = np.int32(0x7F800000)
_QUIET_NAN = np.int32(0x7FC0)


@njit(inline="always")
def b2f(b):
    """bfloat16 bits -> float32, exact."""
    return bits_to_f32(_shl(np.int32(b), 16))


@njit(inline="always")
def f2b(x):
    """float32 -> bfloat16 bits, to nearest even: 0x7FFF plus the kept half's last bit added
    to the dropped half carries into the kept half exactly when rounding up (a carry out of
    the mantissa bumps the exponent, up to infinity). NaN gives the quiet NaN of its sign,
    as ml_dtypes."""
    u = f32_bits(x)
    rounded = _shr(_add(_add(u, 0x7FFF), _and(_shr(u, 16), 1)), 16)
    nan = _or(_QUIET_NAN, _and(_shr(u, 16), 0x8000))
    return np.uint16(rounded if _and(u, 0x7FFFFFFF) <= _F32_INF else nan)


@njit(inline="always")
def round_bf16(x):
    """float32 -> the nearest bfloat16 value, as a float32."""
    return b2f(f2b(x))


@njit(inline="always")
def round_bf16_64(x):
    """float64 -> the nearest bfloat16 value, rounded once, as a float32: first to float32
    rounding to odd (toward zero, the last bit set when anything was dropped), then to
    bfloat16; float32's 16 extra bits make the two roundings one."""
    f = np.float32(x)
    if np.float64(f) != x and x == x:             # inexact (NaN: left as it is)
        bits = f32_bits(f)
        if abs(np.float64(f)) > abs(x):           # rounded away from zero: a step back
            bits = _sub(bits, 1)
        f = bits_to_f32(_or(bits, 1))
    return round_bf16(f)


@njit
def b2f_matrix(x):
    """A bfloat16 matrix (uint16 bits, any layout) as a new C-contiguous float32 one: a
    matmul's operand for BLAS's sgemm."""
    out = np.empty(x.shape, np.float32)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = b2f(x[i, j])
    return out


@njit
def b2f_contiguous(x):
    """A C-contiguous bfloat16 array (uint16 bits) as a float32 array of the same shape."""
    flat = x.ravel()
    out = np.empty(flat.size, np.float32)
    for i in range(flat.size):
        out[i] = b2f(flat[i])
    return out.reshape(x.shape)
