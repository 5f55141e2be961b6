"""The float32 transcendentals of generated kernels (codegen/mathlib.py) against float64 NumPy
rounded to float32, over dense grids that cross the overflow and denormal boundaries."""
import numpy as np
import pytest
from numba import njit

from tracejit.codegen.mathlib import _scale_by_exponent_bits, exp32, logistic32, tanh32
from tracejit.codegen.mathlib import TRIG32_MAX, arctan2_32, arctan32, cos32, log1p32, log32, sin32


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


# -- sin, cos, log, log1p, arctan, arctan2: float64 inside, within 1 ulp -------------------------
@njit(fastmath={"contract"}, error_model="numpy")     # as kernels are compiled
def _arctan2_loop(y, x):
    out = np.empty_like(y)
    for i in range(y.size):
        out[i] = arctan2_32(y[i], x[i])
    return out


# loops compiled as kernels are (error_model="numpy": no zero-division checks in the loop)
_RUN32 = {f: njit(fastmath={"contract"}, error_model="numpy")(_elementwise(f).py_func)
          for f in (sin32, cos32, log32, log1p32, arctan32)}


def _every_binade(n, hi_bits, seed, signed=True):
    """n float32s with bit patterns uniform below ``hi_bits``: every binade alike, denormals
    included (an exponent sweep, which linspace is not)."""
    rng = np.random.default_rng(seed)
    b = rng.integers(0, hi_bits, n, dtype=np.uint32)
    if signed:
        b |= rng.integers(0, 2, n, dtype=np.uint32) << np.uint32(31)
    return b.view(np.float32)


def _f64_rounded(ref, *args):
    with np.errstate(all="ignore"):
        return ref(*(a.astype(np.float64) for a in args)).astype(np.float32)


_F32_INF_BITS = 0x7F800000
_TRIG_MAX_BITS = int(np.float32(TRIG32_MAX).view(np.int32))


@pytest.mark.parametrize("fn, ref, hi_bits, signed", [
    (sin32, np.sin, _TRIG_MAX_BITS, True),
    (cos32, np.cos, _TRIG_MAX_BITS, True),
    (log32, np.log, _F32_INF_BITS, False),
    (log1p32, np.log1p, _F32_INF_BITS, True),      # NaN below -1
    (arctan32, np.arctan, _F32_INF_BITS, True),
])
def test_float64_inside_functions_are_within_one_ulp_in_every_binade(fn, ref, hi_bits, signed):
    """A sample of every binade they cover (every float32 was checked once, offline: at most
    1 ulp), and a dense grid where kernels mostly evaluate them."""
    x = np.concatenate([_every_binade(1_000_000, hi_bits, 0, signed),
                        np.linspace(0 if fn is log32 else -1 if fn is log1p32 else -30, 30,
                                    300_001, dtype=np.float32)])
    got, want = _RUN32[fn](x), _f64_rounded(ref, x)
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all() and _ulps(got[~nan], want[~nan]).max() <= 1


def test_sin_and_cos_reduce_exactly_near_multiples_of_half_pi_up_to_their_bound():
    """Range reduction cancels most where x is nearest a multiple of pi/2: the float32s whose
    remainder is smallest (found by scanning every float32 below 2**50), and the float32s
    around k pi/2 for k up to the bound, all within 1 ulp; from 2**50 on libm's sinf and
    cosf (NumPy's values there; tests/test_trig_large_arguments.py), NaN for infinities."""
    hardest = np.array([21999384576.0, 43998769152.0, 252.89820861816406, 1522788990976.0,
                        505.7964172363281, 42781604.0, 4.71238899230957, 52516.43359375],
                       np.float32)
    k = np.unique(np.geomspace(1, TRIG32_MAX / np.pi * 2, 4000).astype(np.int64))
    near = np.float32(k * (np.pi / 2)).view(np.int32)
    around = (near[:, None] + np.arange(-3, 4, dtype=np.int32)).ravel().view(np.float32)
    top = np.nextafter(np.float32(TRIG32_MAX), np.float32(0))    # 2**50 - 2**26
    below = top - np.arange(64, dtype=np.float32) * np.float32(2**26)
    x = np.concatenate([hardest, around, below])
    x = np.concatenate([x, -x])
    x = x[np.abs(x) < TRIG32_MAX]
    for fn, ref in ((sin32, np.sin), (cos32, np.cos)):
        assert _ulps(_RUN32[fn](x), _f64_rounded(ref, x)).max() <= 1
        beyond = np.array([TRIG32_MAX, -TRIG32_MAX, 3e38, -3.4028235e38, 1.27e30] * 4,
                          np.float32)
        assert _ulps(_RUN32[fn](beyond), _f64_rounded(ref, beyond)).max() <= 1
        assert np.isnan(_RUN32[fn](np.array([np.inf, -np.inf] * 9, np.float32))).all()


def test_arctan2_is_within_one_ulp_of_float64_in_every_quadrant_and_scale():
    rng = np.random.default_rng(1)
    y = _every_binade(500_000, _F32_INF_BITS, 2)
    x = _every_binade(500_000, _F32_INF_BITS, 3)
    # magnitudes close together, across tan(pi/8) and 1, where the reduction switches
    r = rng.uniform(0.3, 1.2, 500_000).astype(np.float32)
    yc = rng.standard_normal(500_000).astype(np.float32)
    xc = (yc * r * rng.choice(np.array([-1, 1], np.float32), 500_000)).astype(np.float32)
    y, x = np.concatenate([y, yc, xc]), np.concatenate([x, xc, yc])
    assert _ulps(_arctan2_loop(y, x), _f64_rounded(np.arctan2, y, x)).max() <= 1


def _same_as_numpy(got, want):
    """Equal values with equal signs of zero, NaN where NumPy's NaN."""
    nan = np.isnan(want)
    return (np.isnan(got) == nan).all() and (got[~nan] == want[~nan]).all() and \
        (np.signbit(got[~nan]) == np.signbit(want[~nan])).all()


def test_sin_cos_log_log1p_arctan_keep_numpys_special_values():
    tiny = np.float32(1e-45)
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny], np.float32)
    with np.errstate(all="ignore"):
        for fn, ref in ((sin32, np.sin), (cos32, np.cos), (log32, np.log), (log1p32, np.log1p),
                        (arctan32, np.arctan)):
            assert _same_as_numpy(_RUN32[fn](x), ref(x)), fn
    assert np.isnan(_RUN32[log32](np.array([-1.0, -tiny, -3e38], np.float32))).all()
    np.testing.assert_array_equal(_RUN32[log1p32](np.array([-1.0, -1.5, -3e38], np.float32)),
                                  [-np.inf, np.nan, np.nan])


def test_arctan2_keeps_numpys_signed_zeros_infinities_and_nans():
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-45, -3e38], np.float32)
    y, x = (a.ravel() for a in np.meshgrid(v, v))
    # float64's arctan2 rounded: NumPy's float32 arctan2(-3e38, -1) is 1 ulp off
    assert _same_as_numpy(_arctan2_loop(y, x), _f64_rounded(np.arctan2, y, x))


def test_float32_sin_cos_log_log1p_arctan_loops_vectorize_without_libm_calls():
    """The reason these exist: a loop over them is vector code (float64 lanes inside), where
    math.sin etc. leave a libm call per element (LLVM's vector sin intrinsic is expanded into
    one call per lane). sin and cos call libm only from 2**50 on, in functions of their own
    (``tracejit_sin32_large`` and its vector versions, which test the lanes first)."""
    import re
    x = np.ones(16, np.float32)
    loops = [_RUN32[f] for f in (sin32, cos32, log32, log1p32, arctan32)] + [_arctan2_loop]
    for run in loops:
        run(*([x] * (2 if run is _arctan2_loop else 1)))
        ir = run.inspect_llvm(run.signatures[0])
        assert re.search(r"<\d+ x double>", ir), run
        # the module's functions but the large-argument ones
        loop = "".join(f for f in re.split(r"(?=^define )", ir, flags=re.M)
                       if not re.match(r"define [^\n]*@tracejit_(sin|cos)32_large", f))
        assert not re.search(r"call [^\n]*@(llvm\.)?(sin|cos|log|atan)", loop), run
        if run in (_RUN32[sin32], _RUN32[cos32]):
            assert re.search(r"call [^\n]*<\d+ x float> @tracejit_(sin|cos)32_large_v\d+", loop)


def test_float32_kernels_use_them_and_float64_kernels_libm():
    import tracejit
    f = tracejit.jit(lambda x: np.sin(x) + np.cos(x) + np.log(x) + np.log1p(x) + np.arctan(x) +
                     np.arctan2(x, 1 - x), tiered=False)
    x = np.linspace(0.1, 3.0, 33, dtype=np.float32)
    src = f.lower(x).source
    for name in ("sin32(", "cos32(", "log32(", "log1p32(", "arctan32(", "arctan2_32("):
        assert name in src
    want = np.sin(x) + np.cos(x) + np.log(x) + np.log1p(x) + np.arctan(x) + np.arctan2(x, 1 - x)
    assert f(x).dtype == np.float32
    np.testing.assert_allclose(f(x), want, rtol=1e-6, atol=1e-6)
    src64 = f.lower(x.astype(np.float64)).source
    assert "math.sin(" in src64 and "sin32(" not in src64 and "arctan2_32(" not in src64


def test_float64_exp_is_within_an_ulp_of_the_exact_value_and_keeps_special_values():
    """exp64 (fdlibm's algorithm, vectorizable) against exp in long double: below 1 ulp over
    the whole range, denormal results rounded once, overflow to inf, NaN kept."""
    from tracejit.codegen.mathlib import exp64
    run = _elementwise(exp64)
    rng = np.random.default_rng(64)
    x = np.concatenate([rng.uniform(-750, 715, 400_000), rng.uniform(-1, 1, 200_000),
                        np.linspace(-745.2, -707, 20001), np.linspace(700, 709.78, 2001)])
    got = run(x)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(np.longdouble))
        want = exact.astype(np.float64)
    finite = np.isfinite(want) & (want > 0)
    err = np.abs((got[finite].astype(np.longdouble) - exact[finite])
                 / np.spacing(want[finite]).astype(np.longdouble))
    assert err.max() < 1.0
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_array_equal(got == 0, want == 0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 709.79, -745.14])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(run(special), np.exp(special))


def test_float64_log_is_within_an_ulp_of_the_exact_value_and_keeps_special_values():
    """log64 (fdlibm's algorithm, vectorizable) against log in long double, on random bit
    patterns (denormals included), near 1 and across [0.5, 2]."""
    from tracejit.codegen.mathlib import log64
    run = _elementwise(log64)
    rng = np.random.default_rng(65)
    bits = rng.integers(0, 0x7FF0000000000000, 400_000, dtype=np.int64)
    x = np.concatenate([bits.view(np.float64), rng.uniform(0.5, 2, 200_000),
                        1 + rng.uniform(-1e-8, 1e-8, 20_000), [5e-324, 1e-310, 1.0, 2.0]])
    got = run(x)
    exact = np.log(x.astype(np.longdouble))
    want = exact.astype(np.float64)
    nonzero = want != 0
    err = np.abs((got[nonzero].astype(np.longdouble) - exact[nonzero])
                 / np.spacing(np.abs(want[nonzero])).astype(np.longdouble))
    assert err.max() < 1.0 and got[x == 1.0].tolist() == [0.0]
    special = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(run(special), np.log(special))


def test_float64_exp_and_log_kernels_vectorize_without_libm_calls():
    import re

    from numba import types

    import tracejit
    from tracejit.codegen import direct
    from tracejit.codegen.source import HEADER
    src = HEADER + (
        '\n@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})\n'
        "def kernel(a0, o0, lo, hi):\n"
        "    for i0_ in range(hi - lo):\n"
        "        i0 = i0_ + max(lo, 0)\n"
        "        o0[i0] = exp64(a0[i0]) + log64(a0[i0])\n"
        "    return 0\n")
    namespace: dict = {}
    exec(src.replace("cache=True, ", ""), namespace)
    array = types.Array(types.float64, 1, "C")
    ir = direct.inspect_llvm(src, (array, array, types.int64, types.int64), namespace)
    assert re.search(r"<\d+ x double>", ir)
    assert not re.search(r"call [^\n]*@(llvm\.)?(exp|log)", ir)
    f = tracejit.jit(lambda x: np.exp(x) + 1 / (1 + np.exp(-x)) + np.log(x), tiered=False)
    x = np.linspace(0.01, 30, 101)
    assert "exp64(" in f.lower(x).source and "log64(" in f.lower(x).source
    np.testing.assert_allclose(f(x), np.exp(x) + 1 / (1 + np.exp(-x)) + np.log(x), rtol=1e-15)
