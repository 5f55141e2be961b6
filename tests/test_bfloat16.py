"""bfloat16 (ml_dtypes' NumPy dtype) end to end.

The conversions kernels use (codegen/bfloat16.py) are checked on every bfloat16 pattern and
at every rounding boundary against ml_dtypes' astype; float64 -> bfloat16 against an exact
rounding (ml_dtypes itself goes through float32 there and can round twice). Programs: the
compiled backend against the reference (the NumPy tier), bit for bit for arithmetic ops
(each computes in float32 and rounds once, as ml_dtypes' ufuncs do) and within a bfloat16
step for exp and tanh, and JAX's promotion rules and float32 accumulation where NumPy with
ml_dtypes differs.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_float16 import _over

import tracejit as tj
from tracejit.ir import dtypes

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 is ml_dtypes' dtype")
from tracejit.codegen.bfloat16 import b2f, f2b, round_bf16, round_bf16_64  # noqa: E402

BF16 = ml_dtypes.bfloat16
ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)      # every bfloat16 pattern
ALL = ALL16.view(BF16)
with np.errstate(invalid="ignore"):
    FINITE = ALL[np.isfinite(ALL.astype(np.float32))]
RNG = np.random.default_rng(7)


def _boundaries(dtype) -> np.ndarray:
    """Every finite bfloat16 value and every halfway point between neighbours, each with its
    neighbours one ulp of ``dtype`` either way, both signs, and the special values."""
    values = np.unique(FINITE.astype(np.float64))
    halves = (values[:-1] + values[1:]) / 2
    points = np.concatenate([values, halves]).astype(dtype)
    near = np.concatenate([points, np.nextafter(points, dtype(np.inf)),
                           np.nextafter(points, dtype(-np.inf))])
    special = np.array([0.0, np.inf, np.nan, np.finfo(dtype).max, np.finfo(dtype).tiny], dtype)
    return np.concatenate([near, -near, special, -special])


def _same(got, want):
    """Equal values, NaN where NaN (a zero's sign aside: NumPy's own float32 maximum gives
    +0.0 or -0.0 for (-0.0, 0.0) depending on its SIMD path)."""
    got, want = (np.asarray(a).astype(np.float32) for a in (got, want))
    np.testing.assert_array_equal(got, want)


def test_every_bfloat16_pattern_converts_to_float32_exactly_and_back():
    as32 = _over(b2f, np.float32)(ALL16)
    np.testing.assert_array_equal(as32.view(np.uint32), ALL.astype(np.float32).view(np.uint32))
    np.testing.assert_array_equal(_over(f2b, np.uint16)(as32), as32.astype(BF16).view(np.uint16))


def test_float32_rounds_to_bfloat16_as_ml_dtypes_at_every_boundary_and_at_random():
    rand = RNG.integers(0, 1 << 32, 10 ** 6, dtype=np.uint64).astype(np.uint32).view(np.float32)
    for x in (_boundaries(np.float32), rand):
        with np.errstate(invalid="ignore"):
            want = x.astype(BF16)
        np.testing.assert_array_equal(_over(f2b, np.uint16)(x), want.view(np.uint16))
        _same(_over(round_bf16, np.float32)(x), want.astype(np.float32))


def _exact(x: np.ndarray) -> np.ndarray:
    """float64 -> the nearest bfloat16 value (ties to even), rounded once, as float64."""
    with np.errstate(all="ignore"):
        m, e = np.frexp(x)
        normal = np.ldexp(np.round(m * 256.0), e - 8)
        sub = np.round(x * 2.0 ** 133) * 2.0 ** -133
        r = np.where(np.abs(x) < 2.0 ** -126, sub, normal)
        return np.where(np.abs(r) >= 2.0 ** 128, np.copysign(np.inf, x), r)


def test_float64_rounds_to_bfloat16_once():
    values = np.unique(FINITE.astype(np.float64))
    halves = (values[:-1] + values[1:]) / 2
    traps = np.concatenate([halves * (1 + 2.0 ** -40), halves * (1 - 2.0 ** -40)])
    assert (traps.astype(np.float32).astype(BF16).astype(np.float64) != _exact(traps)).any()
    rand = RNG.integers(0, 1 << 64, 10 ** 6, dtype=np.uint64).view(np.float64)
    for x in (_boundaries(np.float64), traps, -traps, rand):
        _same(_over(round_bf16_64, np.float32)(x), _exact(x))


# -- programs ------------------------------------------------------------------------------------

def _both(fn, *args):
    """fn compiled and on the reference interpreter's NumPy tier."""
    got = tj.jit(fn, tiered=False)(*args)
    want = tj.jit(fn, backend="numpy")(*args)
    return got, want


def _exact_ops(x):
    return (np.sqrt(np.abs(x)), -x, np.abs(x), np.floor(x), x * x, 1 / x, np.maximum(x, 0))


def _transcendental(x):
    return np.exp(x), np.tanh(x)


def _ulps(got, want):
    """Distance in bfloat16 steps between finite values of one sign or zero."""
    def ordered(a):
        b = np.asarray(a).view(np.uint16).astype(np.int64)
        return np.where(b & 0x8000, 0x8000 - (b & 0x7FFF), 0x8000 + b)
    return np.abs(ordered(got) - ordered(want))


def test_unary_ops_on_every_bfloat16_value_match_the_reference():
    """Arithmetic and rounding ops bit for bit (float32's 24 bits make rounding them to
    bfloat16 exact either way); exp and tanh within one bfloat16 step (the kernels' float32
    exp and tanh and NumPy's differ in float32's last bits)."""
    x = FINITE
    with np.errstate(all="ignore"):
        got, want = _both(_exact_ops, x)
        for g, w in zip(got, want):
            assert g.dtype == BF16
            _same(g, w)
        got, want = _both(_transcendental, x)
        for g, w in zip(got, want):
            assert g.dtype == BF16
            finite = np.isfinite(w.astype(np.float32))
            np.testing.assert_array_equal(np.isfinite(g.astype(np.float32)), finite)
            assert _ulps(g[finite], w[finite]).max() <= 1
        # the reference is ml_dtypes' own ufunc in float32 rounded once
        _same(want[1], np.tanh(x))


def _binary(x, y):
    return x + y, x - y, x * y, x / y, np.minimum(x, y), x > y, np.where(x > y, x, y)


def test_binary_ops_match_the_reference_bit_for_bit():
    x, y = (RNG.standard_normal((2, 200_000)) * 4).astype(BF16)
    got, want = _both(_binary, x, y)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        _same(g, w)


def _promotions(b, h, f, i, d):
    return b + i, b * 2.5, b + 1, b + h, b + f, b + d, b > 0.5


def test_promotion_follows_jax():
    b = np.ones(3, BF16)
    args = (b, np.ones(3, np.float16), np.ones(3, np.float32), np.ones(3, np.int32),
            np.ones(3, np.float64))
    want = [BF16, BF16, BF16, np.float32, np.float32, np.float64, np.bool_]
    for be in ("numpy", "numba"):
        got = tj.jit(_promotions, backend=be, tiered=False)(*args)
        assert [g.dtype for g in got] == [np.dtype(w) for w in want]
        assert dtypes.promote((dtypes.bfloat16, False), (dtypes.float16, False)) == dtypes.float32


def _sums(x, a, b):
    return x.sum(axis=0), x.mean(axis=0), a @ b, np.cumsum(x[:, 0])


def test_reductions_and_matmuls_accumulate_in_float32_and_round_once():
    x = np.ones((1000, 3), BF16)
    a, b = (RNG.standard_normal((2, 64, 64))).astype(BF16)
    got, want = _both(_sums, x, a, b)
    for g in (got[0], want[0]):       # bfloat16 running sums would stop at 256
        assert g.dtype == BF16 and (g.astype(np.float32) == 1000).all()
    exact = (a.astype(np.float32) @ b.astype(np.float32)).astype(BF16)
    for g in (got[2], want[2]):
        assert g.dtype == BF16
        np.testing.assert_allclose(g.astype(np.float32), exact.astype(np.float32),
                                   rtol=2 ** -7, atol=1e-2)
    _same(got[3], want[3])                # a running sum rounds each step, as its dtype does
    _same(got[1], want[1])


def _loss_in(low):
    def loss(w, x):
        return np.tanh(x.astype(low) @ w.astype(low)).astype(np.float32).sum()
    return loss


def test_grad_through_bfloat16_is_float32_and_close_to_float32s():
    w = RNG.standard_normal((16, 8)).astype(np.float32)
    x = RNG.standard_normal((4, 16)).astype(np.float32)
    for be in ("numpy", "numba"):
        g = tj.jit(tj.grad(_loss_in(BF16)), backend=be)(w, x)
        g32 = tj.jit(tj.grad(_loss_in(np.float32)), backend=be)(w, x)
        assert g.dtype == np.float32 and np.abs(g).max() > 0
        np.testing.assert_allclose(g, g32, rtol=0.05, atol=0.05)
