"""sin, cos and tan of arguments of every magnitude under jit against NumPy: float32 (whose
sin and cos kernels reduce |x| < 2**50 inline and call libm's sinf/cosf from there on,
codegen/mathlib.py), bfloat16 and float16 (computed in float32), float64 (libm).

One kernel per dtype (sin, cos and tan of the same input together), over random bit patterns
of every exponent, denormals, both signs, the largest finite values, +-0, +-inf and NaN: at
most 1 ulp from NumPy's own float32 result (measured: 1 ulp, and bit for bit from 2**50 on,
where NumPy calls the same libm functions).
"""
from __future__ import annotations

import numpy as np
import pytest

import tracejit

_TRIG = tracejit.jit(lambda x: (np.sin(x), np.cos(x), np.tan(x)), tiered=False)
_REFS = (np.sin, np.cos, np.tan)


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in units in the last place of same-sized floats (their bit patterns ordered
    like their values)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    magnitude = np.int64((1 << (8 * got.dtype.itemsize - 1)) - 1)

    def ordered(v):
        i = v.view(bits).astype(np.int64)
        return np.where(i < 0, -(i & magnitude), i)
    return np.abs(ordered(got) - ordered(want))


def _specials(dtype) -> np.ndarray:
    f = np.finfo(dtype)
    v = np.array([0.0, f.smallest_subnormal, f.tiny, 1.0, 2.0**50, 1.27e30, f.max, np.inf,
                  np.nan], np.float64)
    with np.errstate(over="ignore"):
        v = v.astype(dtype)
    return np.concatenate([v, -v])


def _every_exponent(n: int, dtype, seed: int) -> np.ndarray:
    """n values with uniform random bit patterns below infinity's (every binade alike,
    denormals included), either sign."""
    rng = np.random.default_rng(seed)
    nbits = 8 * np.dtype(dtype).itemsize
    uint = {16: np.uint16, 32: np.uint32, 64: np.uint64}[nbits]
    inf_bits = int(np.array(np.inf, dtype).view(uint))
    b = rng.integers(0, inf_bits, n, dtype=np.uint64).astype(uint)
    b |= rng.integers(0, 2, n, dtype=np.uint64).astype(uint) << uint(nbits - 1)
    return b.view(dtype)


def _check(x: np.ndarray, max_ulps: int):
    with np.errstate(invalid="ignore", over="ignore"):
        wants = [ref(x) for ref in _REFS]
    gots = _TRIG(x)
    for got, want, ref in zip(gots, wants, _REFS):
        assert got.dtype == want.dtype, ref
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan, err_msg=ref.__name__)
        ulps = _ulps(got[~nan], want[~nan])
        assert ulps.max() <= max_ulps, (ref.__name__, ulps.max(), x[~nan][ulps.argmax()])
        # the differential tests' float32 tolerance
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    return gots


def test_float32_sin_cos_tan_of_every_magnitude_match_numpy():
    x = np.concatenate([_every_exponent(200_000, np.float32, 0), _specials(np.float32),
                        np.float32(1.27e30) * np.arange(1, 33, dtype=np.float32)])
    sin, cos, _ = _check(x, 1)
    large = np.abs(x) >= 2.0**50
    assert large.sum() > 50_000
    # from 2**50 on, libm's sinf and cosf: NumPy's values bit for bit
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(sin[large], np.sin(x[large]))
        np.testing.assert_array_equal(cos[large], np.cos(x[large]))


def test_float32_sin_keeps_the_sign_of_zero_and_gives_nan_for_infinities():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, -3e38] * 3, np.float32)
    sin, cos, tan = _TRIG(x)
    np.testing.assert_array_equal(np.signbit(sin[:2]), [False, True])
    assert np.isnan(sin[2:5]).all() and np.isnan(cos[2:5]).all() and np.isnan(tan[2:5]).all()
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(sin, np.sin(x))


def test_float64_sin_cos_tan_of_huge_arguments_match_numpy():
    x = np.concatenate([_every_exponent(20_000, np.float64, 1), _specials(np.float64),
                        np.array([1e300, 2.0**1000, -1e308, 1e22])])
    _check(x, 1)


def test_float16_sin_cos_tan_match_numpy():
    x = np.concatenate([_every_exponent(20_000, np.float16, 2), _specials(np.float16)])
    _check(x, 1)


def test_bfloat16_sin_cos_of_every_magnitude_are_float32s_rounded():
    """bfloat16 computes in float32 (up to 3.4e38: the large-argument path) and rounds once,
    as ml_dtypes' own ufuncs do."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    x = np.concatenate([_every_exponent(20_000, np.float32, 3), _specials(np.float32)])
    x = x.astype(bf16)
    f = tracejit.jit(lambda a: (np.sin(a), np.cos(a)), tiered=False)
    x32 = x.astype(np.float32)
    with np.errstate(invalid="ignore"):
        wants = (np.sin(x32).astype(bf16), np.cos(x32).astype(bf16))
    for got, want in zip(f(x), wants):
        assert got.dtype == bf16
        nan = np.isnan(want.astype(np.float32))
        np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
        assert _ulps(got[~nan], want[~nan]).max() <= 1
    assert (np.abs(x32) >= 2.0**50).sum() > 5_000
