"""Regression tests for low- and mixed-precision bugs found by probing (float16, bfloat16,
autocast, GradScaler). Each test failed before its fix."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj
from tracejit.amp import GradScaler

F16 = np.float16
ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _ulps16(got, want):
    """Distance in steps of a 16-bit float (float16 or bfloat16: same ordering of the bits);
    NaN to NaN 0."""
    def ordered(a):
        b = np.asarray(a).view(np.uint16).astype(np.int64)
        return np.where(b & 0x8000, 0x8000 - (b & 0x7FFF), 0x8000 + b)
    g, w = np.asarray(got).astype(np.float32), np.asarray(want).astype(np.float32)
    d = np.abs(ordered(got) - ordered(want))
    return np.where(np.isnan(g) & np.isnan(w), 0, np.where(np.isnan(g) | np.isnan(w), 1 << 20, d))


def _log2(x):
    return np.log2(x)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_log2_of_every_float16_is_within_an_ulp_of_numpy(backend):
    """np.log2 was log (rounded to float16) times 1/ln 2 (rounded again): 2 ulps off on
    subnormals (log2(1.79e-07) gave -22.4, NumPy -22.42). Now in float32, rounded once."""
    x = ALL16.view(F16)
    with np.errstate(all="ignore"):
        got = tj.jit(_log2, backend=backend, tiered=False)(x)
        want = np.log2(x)
    assert got.dtype == F16
    assert _ulps16(got, want).max() <= 1


def test_log2_and_log10_of_bfloat16_round_once():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    x = ALL16.view(bf16)
    x = x[np.isfinite(x.astype(np.float32))]

    def f(x):
        return np.log2(x), np.log10(x)
    got = tj.jit(f, tiered=False)(x)
    with np.errstate(all="ignore"):
        want = (np.log2(x.astype(np.float32)).astype(bf16),
                np.log10(x.astype(np.float32)).astype(bf16))
    for g, w in zip(got, want):
        assert g.dtype == bf16
        assert _ulps16(g, w).max() <= 1


def _to_bf16(x):
    return x.astype(_bf16())


def _bf16():
    return pytest.importorskip("ml_dtypes").bfloat16


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_wide_integers_round_to_bfloat16_once_in_kernels(dtype):
    """Compiled kernels converted int32/int64 to float32 first, then to bfloat16: an integer
    just above a bfloat16 halfway point rounded onto it, then to even (2**24 + 3 * 2**16 + 1
    gave 2**24 + 2**17, NumPy 2**24 + 2**18), disagreeing with the NumPy tier."""
    bf16 = _bf16()
    k = np.arange(1, 60)
    h = 2 ** 24 + k * 2 ** 17 + 2 ** 16          # bfloat16 halfway points, integers
    v = np.concatenate([h + 1, h - 1, h + 3]).astype(dtype)
    if np.dtype(dtype).kind == "i":
        v = np.concatenate([v, -v])
    want = v.astype(bf16)
    for backend in ("numba", "numpy"):
        got = tj.jit(_to_bf16, backend=backend, tiered=False)(v)
        assert got.dtype == bf16
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def test_grad_scaler_unscales_bfloat16_gradients_as_torch():
    """torch's unscale_ refuses only float16 gradients; bfloat16 ones were refused with
    'a gradient has dtype bfloat16; gradients are floats' (its NumPy kind is 'V')."""
    bf16 = _bf16()
    scaler = GradScaler()
    state = scaler.init()
    grads = {"a": np.full(3, 2.0, bf16), "b": np.ones(2, np.float32)}
    for unscale in (scaler.unscale, tj.jit(scaler.unscale)):
        out, found_inf = unscale(grads, state)
        assert out["a"].dtype == bf16 and out["b"].dtype == np.float32
        np.testing.assert_array_equal(out["a"].astype(np.float32), 2.0 / 2 ** 16)
        assert not bool(found_inf)
    bad = {"a": np.array([np.inf, 1.0], bf16), "b": np.ones(2, np.float32)}
    assert bool(scaler.unscale(bad, state)[1])
    eager = GradScaler()
    g = {"a": np.full(3, 4.0, bf16)}
    eager.unscale_(g)
    np.testing.assert_array_equal(g["a"].astype(np.float32), 4.0 / 2 ** 16)


def _leading_reductions(x):
    return x.sum(axis=0), (x + F16(1.5)).prod(axis=0), x.mean(axis=0), x @ x.T


def test_float16_reductions_on_the_numpy_tier_round_once_as_the_kernels():
    """NumPy's float16 sum over a leading axis (and its prod and matmul) rounds every step,
    so the NumPy tier (a first call) and the interpreter gave other bits than the compiled
    kernels (later calls) for the same input: 22 of 40 column sums differed."""
    x = np.random.default_rng(2).standard_normal((12, 40)).astype(F16)
    exact = x.astype(np.float64).sum(axis=0).astype(F16)
    kernels = tj.jit(_leading_reductions, tiered=False)(x)
    np.testing.assert_array_equal(kernels[0], exact)
    for backend in ("numpy", "interpreter"):
        got = tj.jit(_leading_reductions, backend=backend)(x)
        for g, k in zip(got, kernels):
            assert g.dtype == F16
            np.testing.assert_array_equal(g, k)
