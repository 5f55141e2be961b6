"""Functions computed to a 16-bit float's accuracy, for values that need no more: a float16
or bfloat16 result, or a float32 value a kernel computes only to round it to one (a float16
chain under ``amp.excess_precision``). ``emitters.HALF_ACCURATE`` says which op takes which,
``kernel.half_accurate`` which values qualify; a value stored as float32, compared or reduced
keeps mathlib's float32 functions.

They made the float16 elementwise chain of benchmarks/half_precision.py, bound by float32
arithmetic (tanh most of it), 1.77-1.87x faster than float32 with float32 intermediates
(docs/performance.md). tests/test_half_accurate_math.py checks them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .mathlib import exp_reduced, scale_by_power_of_two

_F = np.float32
_TANH_ONE = _F(7.90531110763549805)     # from here tanh is 1 - 2.7e-7: the result is +-1


@njit(inline="always", fastmath={"contract"})
def tanh16(x):
    """The rational approximation of Eigen and XLA (their float32 tanh), x P(x**2) / Q(x**2),
    x itself below 0.0004. Relative error 2.7e-7 (6 float32 ulp, against tanh32's 2): rounded
    to float16 it gives NumPy's float16 tanh on every float16 value; a third of tanh32's
    instructions."""
    z = x * x
    p = _F(-2.76076847742355e-16)
    p = p * z + _F(2.00018790482477e-13)
    p = p * z + _F(-8.60467152213735e-11)
    p = p * z + _F(5.12229709037114e-08)
    p = p * z + _F(1.48572235717979e-05)
    p = p * z + _F(6.37261928875436e-04)
    p = p * z + _F(4.89352455891786e-03)
    q = _F(1.19825839466702e-06)
    q = q * z + _F(1.18534705686654e-04)
    q = q * z + _F(2.26843463243900e-03)
    q = q * z + _F(4.89352518554385e-03)
    ax = x if x >= _F(0) else -x
    r = x if ax < _F(0.0004) else (p * x) / q
    return np.float32(np.copysign(_F(1.0), x)) if ax >= _TANH_ONE else r   # NaN: r


@njit(inline="always", fastmath={"contract"})
def exp16(x):
    """exp32's range reduction and scaling with a degree-5 polynomial for exp(r) on
    [-ln2/2, ln2/2] (relative error 1.1e-7, against exp32's degree 7): two fewer
    multiply-adds and constants in a fused loop that is short of registers."""
    n, r = exp_reduced(x)
    p = _F(8.312806487083435e-3)
    p = p * r + _F(4.1890211403369904e-2)
    p = p * r + _F(1.6667111217975616e-1)
    p = p * r + _F(4.99992311000824e-1)
    p = p * r * r + r + _F(1.0)
    out = scale_by_power_of_two(p, np.int32(n))
    return out if x == x else x
