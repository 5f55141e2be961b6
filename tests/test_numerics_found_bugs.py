"""Regression tests for numerical wrong answers of compiled code (and of the NumPy tier) against
NumPy and SciPy, found by probing special values and whole ranges. Each test failed before its
fix."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import tracejit as tj


def _logs(tens, twos):
    return (np.log10(tens), np.floor(np.log10(tens)), np.log2(twos), np.floor(np.log2(twos)))


@pytest.mark.parametrize("tiered", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_log10_and_log2_are_exact_at_exact_powers(dtype, tiered):
    """log10 and log2 were log(x) * (1 / log(base)): log10(1000.0) = 2.9999999999999996, so
    np.floor(np.log10(x)) counted one digit short at every power of ten, and log2(2.0**-1020)
    was 1 ulp off; NumPy's (libm's) are exact there. tiered=True: the NumPy tier runs the same
    IR, and was as wrong."""
    decades, binades = ((-307, 309), (-1074, 1024)) if dtype == np.float64 else ((-37, 39),
                                                                                  (-149, 128))
    special = [0.0, -1.0, np.inf, np.nan, 1.0]
    tens = np.array([float(f"1e{k}") for k in range(*decades)] + special, dtype)
    twos = np.concatenate([np.ldexp(1.0, np.arange(*binades)), special]).astype(dtype)
    with np.errstate(all="ignore"):
        got = tj.jit(_logs, tiered=tiered)(tens, twos)
        want = _logs(tens, twos)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_log10_and_log2_stay_within_a_few_ulps_and_keep_their_derivatives():
    """The exact-power fix (n + log(x / base**n) / log(base)) keeps the values elsewhere and
    the derivative 1 / (x log(base)), also at the powers themselves."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(0.1, 10, 2000), np.exp(rng.uniform(-700, 700, 2000))])
    got10, got2 = tj.jit(lambda x: (np.log10(x), np.log2(x)), tiered=False)(x)
    for got, want in ((got10, np.log10(x)), (got2, np.log2(x))):
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(float).eps, atol=0)
    at = np.array([1.0, 10.0, 100.0, 0.5, 2.0, 1024.0, 3.0])
    grad = tj.jit(tj.grad(lambda x: (np.log10(x) + np.log2(x)).sum()), tiered=False)(at)
    np.testing.assert_allclose(grad, 1 / (at * np.log(10)) + 1 / (at * np.log(2)), rtol=1e-15)


def test_digamma_matches_scipy_between_zero_and_ten():
    """The compiled digamma summed 1/x up to x >= 10 before the asymptotic series, which
    cancelled near its root: 79 ulps off SciPy at 1.597, 6 at digamma(1) = -euler_gamma. Now
    SciPy's (cephes psi): harmonic sums at the integers, else the recurrence into [1, 2] and
    Boost's rational approximation there, equal to SciPy's bit for bit."""
    x = np.concatenate([np.linspace(0.01, 10, 20001), np.arange(1.0, 11.0), -np.linspace(0.6, 9.4, 9)])
    got = tj.jit(lambda x: scipy.special.digamma(x), tiered=False)(x)
    want = scipy.special.digamma(x)
    pos = x > 0
    np.testing.assert_array_equal(got[pos], want[pos])
    np.testing.assert_allclose(got[~pos], want[~pos], rtol=1e-14)


def test_conjugate_of_bools_is_int8_and_positive_of_bools_is_refused_as_numpy_does():
    b = np.array([True, False])
    out = tj.jit(np.conjugate, backend="numpy")(b)
    assert out.dtype == np.conjugate(b).dtype == np.int8
    np.testing.assert_array_equal(out, [1, 0])
    with pytest.raises(TypeError, match="positive"):
        tj.jit(np.positive)(b)


def test_digamma_next_to_a_negative_pole_is_the_same_in_the_reference_and_the_kernels():
    # the reference (SciPy's digamma) lost digits next to a pole: 6 % off the kernels' value
    # at -2 + 8 ulp, which the differential random programs found
    from tracejit.ir.ops import _digamma
    x = np.array([-2 + 8 * np.spacing(2.0), -3 - 2 * np.spacing(3.0), -0.5, -7.25, 2.5])
    ref = _digamma(x)
    compiled = tj.jit(lambda v: tj.scipy.special.digamma(v), backend="numba", tiered=False)(x)
    np.testing.assert_allclose(compiled, ref, rtol=1e-12)
    # next to the pole -2 + e, psi is -1/e + psi(3) + O(e): the exact leading terms
    e = 8 * np.spacing(2.0)
    np.testing.assert_allclose(ref[0], -1 / e + 0.9227843350984671, rtol=1e-12)
