"""The float32 transcendentals of generated kernels (codegen/mathlib.py) against float64 NumPy
rounded to float32, over dense grids that cross the overflow and denormal boundaries."""
import numpy as np
import pytest
from numba import njit

from tracejit.codegen.mathlib import _scale_by_exponent_bits, exp32, logistic32, tanh32


def _elementwise(fn):
    @njit(fastmath={"contract"})
    def run(a):
        out = np.empty_like(a)
        for i in range(a.size):
            out[i] = fn(a[i])
        return out
    return run


_RUN = {f: _elementwise(f) for f in (exp32, tanh32, logistic32)}


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in float32 units in the last place (denormals included: the bit patterns of
    same-signed floats are ordered like their values)."""
    def ordered(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(got) - ordered(want))


@pytest.mark.parametrize("fn, ref, lo, hi", [
    (exp32, np.exp, -110.0, 90.0),            # 0 below -103.97, inf above 88.72
    (tanh32, np.tanh, -12.0, 12.0),
    # below -88.7, exp(-x) overflows and logistic gives 0 where the true value is denormal, as
    # NumPy's float32 1 / (1 + exp(-x)) does (the interpreter's definition)
    (logistic32, lambda x: 1 / (1 + np.exp(-x)), -88.0, 110.0),
])
def test_transcendentals_are_within_two_ulp_of_float64(fn, ref, lo, hi):
    x = np.linspace(lo, hi, 1_000_003, dtype=np.float32)
    with np.errstate(over="ignore", under="ignore"):
        want = ref(x.astype(np.float64)).astype(np.float32)
    got = _RUN[fn](x)
    assert _ulps(got, want).max() <= 2


def test_exp_reaches_denormals_and_overflows_to_inf():
    x = np.array([-87.5, -95.0, -100.0, -103.0, -103.9, -104.5, 88.7, 88.73, 1e30, -1e30],
                 np.float32)
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    got = _RUN[exp32](x)
    assert _ulps(got, want).max() <= 1
    assert 0 < got[4] < np.finfo(np.float32).tiny and got[5] == 0 and np.isinf(got[7])


def test_special_values_keep_numpys_results():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    np.testing.assert_array_equal(_RUN[exp32](x), [np.nan, np.inf, 0, 1, 1])
    np.testing.assert_array_equal(_RUN[tanh32](x), [np.nan, 1, -1, 0, -0.0])
    np.testing.assert_array_equal(_RUN[logistic32](x), [np.nan, 1, 0, 0.5, 0.5])


def test_power_of_two_scaling_by_exponent_bits_rounds_like_ldexp():
    """The non-AVX-512 form of exp's last step (two multiplications) rounds once, like ldexp,
    down to the smallest denormal."""
    scale = _scale_by_exponent_bits
    p = np.linspace(0.70, 1.42, 97, dtype=np.float32)
    for n in range(-152, 129):
        got = np.array([scale(v, np.int32(n)) for v in p], np.float32)
        with np.errstate(over="ignore", under="ignore"):
            np.testing.assert_array_equal(got, np.ldexp(p, n))


def test_division_by_a_row_invariant_is_within_an_ulp_and_keeps_special_values():
    """A divisor that stays the same along the inner loop (here the max of a row whose values
    are all the divisor, so that it can be any value) becomes a scale and a multiply by its reciprocal's parts (mathlib.divide_by_parts): within
    an ulp of NumPy's quotient (two in the denormal range), with NumPy's infinities, zeros,
    signs and NaNs for zero, infinite, NaN, denormal and huge divisors."""
    import tracejit
    f32 = np.float32
    x = np.array([0.0, -0.0, 1.0, -1.0, 3e38, -3e38, 1e-40, 1e-45, np.inf, -np.inf, np.nan,
                  2.5, 7e-20, 6e19], f32)
    d = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 1e-45, 3e38, 2.0**-126, 1.5, -7.0,
                  0.1, 2.0**127, 3.0], f32)[:, None]
    xs = np.broadcast_to(x, (len(d), len(x))).copy()
    ds = np.broadcast_to(d, xs.shape).copy()
    f = tracejit.jit(lambda a, b: a / b.max(axis=1, keepdims=True))
    assert "= divide_by_parts(" in f.lower(xs, ds).source
    with np.errstate(all="ignore"):
        want = xs / d
    got = f(xs, ds)
    assert (np.isnan(got) == np.isnan(want)).all()
    ok = ~np.isnan(want)
    assert (np.signbit(got[ok]) == np.signbit(want[ok])).all()
    assert _ulps(np.abs(got[ok]), np.abs(want[ok])).max() <= 2
    assert _ulps(np.abs(got[ok]), np.abs(want[ok]))[np.abs(want[ok]) >= 2.0**-126].max() <= 1
