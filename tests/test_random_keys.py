"""tracejit.random: JAX's counter-based PRNG, its numbers (JAX's outputs and Random123's known
answers, hard-coded so that CI checks them without JAX; against jax.random itself where it is
installed), and its use eagerly, under jit (one trace for many keys), vmap and grad."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
from tracejit import random as jr


def _f32(hexes):
    return np.array([float.fromhex(h) for h in hexes], np.float32)


# ---------------------------------------------------------------------------------------------
# The numbers


def test_threefry2x32_known_answers_of_random123():
    """Salmon et al.'s known-answer vectors for Threefry-2x32, 20 rounds (kat_vectors)."""
    u = np.uint32
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for (k1, k2), (x1, x2), want in cases:
        assert tuple(int(v) for v in jr.threefry2x32(u(k1), u(k2), u(x1), u(x2))) == want


def test_keys_and_draws_are_jaxs():
    """Outputs of jax 0.10 (default config: x64 off, jax_threefry_partitionable on)."""
    k0, k42 = jr.PRNGKey(0), jr.PRNGKey(42)
    assert k42.dtype == np.uint32 and k42.tolist() == [0, 42]
    assert jr.key(42).tolist() == [0, 42]
    assert jr.PRNGKey(2 ** 40 + 3).tolist() == [256, 3]          # JAX's, with x64
    assert jr.PRNGKey(-1).tolist() == [2 ** 32 - 1, 2 ** 32 - 1]
    assert jr.PRNGKey(np.int32(-1)).tolist() == [0, 2 ** 32 - 1]
    assert jr.split(k0).tolist() == [[1797259609, 2579123966], [928981903, 3453687069]]
    assert jr.split(k42, 3).tolist() == [[1832780943, 270669613], [64467757, 2916123636],
                                         [2465931498, 255383827]]
    assert jr.split(k42, (3, 1)).shape == (3, 1, 2)
    assert jr.fold_in(k42, 7).tolist() == [2547012911, 1371500959]
    bits = jr.bits(k42, (5,))
    assert bits.dtype == np.uint32
    assert bits.tolist() == [2098992034, 2919706841, 2646866425, 2409546199, 1935504149]
    assert jr.bits(k42, (2,), np.uint64).tolist() == [7871734211187709741, 276886910877598708]
    u = jr.uniform(k42, (4,))
    assert u.dtype == np.float32
    np.testing.assert_array_equal(u, _f32(["0x1.f470480000000p-2", "0x1.5c0e600000000p-1",
                                           "0x1.3b87f00000000p-1", "0x1.1f3d800000000p-1"]))
    np.testing.assert_array_equal(
        jr.uniform(k42, (3,), np.float64),
        [float.fromhex(h) for h in ("0x1.b4f8123c40884p-2", "0x1.ebd996d6e8400p-7",
                                    "0x1.25f641d41e71ap-1")])
    normal = _f32(["-0x1.cfbe2a0000000p-6", "0x1.de57d00000000p-2", "0x1.2eccc20000000p-2",
                   "0x1.3a76480000000p-3", "-0x1.fc09d60000000p-4", "0x1.bc42340000000p-3"])
    n = jr.normal(k42, (6,))
    assert n.dtype == np.float32       # erfinv through log1p: JAX's to the last ulp or so
    np.testing.assert_array_max_ulp(n, normal, maxulp=4)
    r = jr.randint(k42, (8,), -5, 17)
    assert r.dtype == np.int32 and r.tolist() == [7, 7, 4, 14, 10, 12, 14, 2]
    assert jr.bernoulli(k42, 0.5, (8,)).tolist() == [True, False, False, False, True, False,
                                                     True, False]
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4], np.float32))
    assert jr.categorical(k42, logits, shape=(10,)).tolist() == [3, 3, 3, 3, 3, 3, 1, 1, 1, 1]
    assert jr.permutation(k42, np.arange(10, dtype=np.int32)).tolist() == [7, 4, 2, 5, 3, 6,
                                                                           8, 9, 0, 1]


@pytest.mark.slow
def test_bfloat16_draws_are_jaxs():
    """bfloat16 (ml_dtypes'): uniform from 8 random bits, as JAX draws them. Slow alone:
    importing ml_dtypes takes 2 s."""
    bf16 = pytest.importorskip("ml_dtypes").bfloat16
    k42 = jr.PRNGKey(42)
    u = jr.uniform(k42, (4,), bf16)
    assert u.dtype == bf16 and u.astype(np.float32).tolist() == [0.6328125, 0.84375, 0.96875,
                                                                 0.8359375]
    assert jr.normal(k42, (4,), bf16).astype(np.float32).tolist() == [0.34375, 1.015625,
                                                                      1.890625, 0.984375]


def test_the_original_threefry_layout_is_jaxs():
    """jax_threefry_partitionable off (JAX's layout before 0.5)."""
    k42 = jr.PRNGKey(42)
    old = jr.set_threefry_partitionable(False)
    try:
        assert jr.split(k42, 3).tolist() == [[3134548294, 3733159049], [3746501087, 894150801],
                                             [801545058, 2363201431]]
        assert jr.bits(k42, (5,)).tolist() == [3134548294, 3733159049, 843694964, 894150801,
                                               801545058]
        np.testing.assert_array_equal(jr.uniform(k42, (3,)), _f32(
            ["0x1.25f6400000000p-1", "0x1.9a3f800000000p-4", "0x1.e71b000000000p-5"]))
    finally:
        jr.set_threefry_partitionable(old)


@pytest.mark.slow
def test_against_jax_random():
    """Against jax.random itself (slow: importing JAX and compiling the one jax.jit of all
    the draws take 5 s; the values above check the same without JAX)."""
    jax = pytest.importorskip("jax")
    import jax.random as jxr

    def draws(rnd, k):
        logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
        p = np.linspace(0, 1, 11).astype(np.float32)
        return (rnd.split(k, 5), rnd.fold_in(k, 2 ** 31 + 5), rnd.bits(k, (7, 3), np.uint8),
                rnd.bits(k, (7, 3), np.uint16), rnd.uniform(k, (101,), np.float16, -3.0, 5.0),
                rnd.uniform(k, (101,), np.float32, -3.0, 5.0), rnd.normal(k, (1000,)),
                rnd.randint(k, (50,), 3, 100, np.int8), rnd.randint(k, (50,), 3, 100, np.uint32),
                rnd.randint(k, (50,), -2 ** 31, 2 ** 31 - 1), rnd.bernoulli(k, p),
                rnd.categorical(k, logits, axis=0, shape=(5, 3)),
                rnd.choice(k, 10, (4,), replace=False))

    ours = draws(jr, jr.PRNGKey(7))
    theirs = jax.jit(lambda k: draws(jxr, k))(jxr.PRNGKey(7))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        b = np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, i
        if i == 6:                      # normal: erfinv's log1p rounds otherwise in XLA
            np.testing.assert_array_max_ulp(a, b, maxulp=4)
            assert (a == b).mean() > 0.9
        else:
            np.testing.assert_array_equal(a, b, err_msg=str(i))


def test_distributions_are_sane():
    k = jr.PRNGKey(3)
    n = 100_000
    u = jr.uniform(k, (n,))
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    z = jr.normal(jr.fold_in(k, 1), (n,))
    assert abs(z.mean()) < 0.015 and abs(z.var() - 1) < 0.02 and np.isfinite(z).all()
    assert abs(jr.bernoulli(jr.fold_in(k, 2), 0.3, (n,)).mean() - 0.3) < 0.01
    r = jr.randint(jr.fold_in(k, 3), (n,), -2, 5)
    assert r.min() == -2 and r.max() == 4 and abs(r.mean() - 1) < 0.05
    c = jr.categorical(jr.fold_in(k, 4), np.log(np.array([0.2, 0.5, 0.3], np.float32)),
                       shape=(n,))
    np.testing.assert_allclose(np.bincount(c) / n, [0.2, 0.5, 0.3], atol=0.01)
    t = jr.truncated_normal(jr.fold_in(k, 5), -1.0, 2.0, (n,))
    assert -1 < t.min() and t.max() < 2
    assert sorted(jr.permutation(k, 50).tolist()) == list(range(50))
    a, b = jr.split(k)
    assert not np.array_equal(jr.bits(a, (4,)), jr.bits(b, (4,)))


# ---------------------------------------------------------------------------------------------
# Under transforms


def test_a_jitted_function_of_a_key_traces_once_and_draws_anew_each_call():
    traces = []

    def step(key, w):
        traces.append(1)
        key, sub = jr.split(key)
        return key, w + jr.normal(sub, w.shape) * jr.bernoulli(key, 0.75, w.shape)

    jstep = tracejit.jit(step)
    w = np.zeros((3, 4), np.float32)
    key = jr.PRNGKey(0)
    seen = []
    for _ in range(3):
        out = jstep(key, w)
        want = step(key, w)
        for got, ref in zip(out, want):
            assert got.dtype == ref.dtype and got.shape == ref.shape
            np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(out[0], want[0])
        seen.append(out[1])
        key = out[0]
    assert len(traces) == 1 + 3                 # one trace, and the eager references
    assert not np.array_equal(seen[0], seen[1])


def test_a_traced_seed_gives_a_traced_key():
    f = tracejit.jit(lambda s: jr.PRNGKey(s))
    assert f(np.int64(-1)).tolist() == jr.PRNGKey(-1).tolist()
    assert f(np.int64(2 ** 40 + 3)).tolist() == [256, 3]
    assert f(np.int32(-1)).tolist() == [0, 2 ** 32 - 1]


# vmap and grad inside jit on the NumPy backend: the transforms' rules on the draws' IR, without
# compiling kernels (the jitted step above compiles them; eager vmap and grad compile as jit)


def test_vmap_over_a_batch_of_keys():
    keys = jr.split(jr.PRNGKey(0), 8)
    f = tracejit.jit(lambda ks: (tracejit.vmap(lambda k: jr.normal(k, (3,)))(ks),
                                 tracejit.vmap(jr.split)(ks)), backend="numpy")
    out, subkeys = f(keys)
    np.testing.assert_array_equal(out, np.stack([jr.normal(k, (3,)) for k in keys]))
    np.testing.assert_array_equal(subkeys, np.stack([jr.split(k) for k in keys]))


def test_grad_of_a_function_that_draws_from_a_key_argument():
    def loss(w, key):
        return np.sum((w + 0.1 * jr.normal(key, w.shape)) ** 2)

    w = np.ones(4, np.float32)
    g = tracejit.jit(tracejit.grad(loss), backend="numpy")
    for key in (jr.PRNGKey(1), jr.PRNGKey(2)):
        want = 2 * (w + 0.1 * jr.normal(key, (4,)))
        np.testing.assert_allclose(g(w, key), want, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# The API around it


def test_errors_and_the_lazy_submodule():
    assert "random" in tracejit._LAZY_SUBMODULES and "random" in dir(tracejit)
    assert tracejit.random.PRNGKey is jr.PRNGKey
    with pytest.raises(ValueError, match="vmap"):
        jr.normal(jr.split(jr.PRNGKey(0), 2), (3,))
    with pytest.raises(TypeError, match="uint32"):
        jr.normal(np.zeros(2, np.int64), (3,))
    with pytest.raises(ValueError, match="float dtype"):
        jr.uniform(jr.PRNGKey(0), (2,), np.int32)


def test_a_numpy_draw_in_jit_points_at_tracejit_random():
    with pytest.raises(tracejit.UnsupportedError, match="tracejit.random"):
        tracejit.jit(lambda x: x + np.random.randn(3))(np.zeros(3))
