"""Tiered execution: a new signature's first calls run on the NumPy tier while its kernels
compile in the background; later calls switch to compiled code between calls."""
import warnings

import numpy as np
import pytest

import tracejit
from blas_helpers import FakeBlas, use_fake_blas
from tracejit.driver import CompileWarning, backend, fusion_of


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _expected(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _never_compiled(x):
    # a structure no other test compiles, so that its kernel is not in this process yet
    return np.arcsinh(_softmax(x)) * np.float32(3) - np.expm1(x).sum(axis=0)


def _never_compiled_expected(x):
    return np.arcsinh(_expected(x)) * np.float32(3) - np.expm1(x).sum(axis=0)


def test_the_first_call_runs_on_numpy_and_later_calls_run_compiled_with_the_same_results(
        tmp_path, monkeypatch):
    monkeypatch.setattr(tracejit.config, "cache_dir", str(tmp_path))    # an empty disk cache
    f = tracejit.jit(_never_compiled, tiered=True)
    x = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32)
    first = f(x)
    (stats,) = f.stats()
    assert stats["calls"]["numpy"] + stats["calls"]["compiled"] == 1
    f.wait_compiled()
    later = f(x)
    (stats,) = f.stats()
    assert stats["tier"] == "compiled" and stats["calls"]["compiled"] >= 1
    assert stats["compile_seconds"] > 0
    np.testing.assert_allclose(first, _never_compiled_expected(x), rtol=1e-5)
    np.testing.assert_allclose(later, first, rtol=1e-5)     # the tiers agree
    assert "calls on the NumPy tier" in f.lower(x).tiers
    # once its kernels are compiled, a new function with the same code starts compiled
    g = tracejit.jit(_never_compiled, tiered=True)
    np.testing.assert_allclose(g(x), later, rtol=1e-6)
    assert g.stats()[0]["tier"] == "compiled" and g.stats()[0]["calls"] is None


def test_untiered_jit_runs_compiled_code_from_the_first_call():
    f = tracejit.jit(_softmax, tiered=False)
    f(np.ones((2, 3)))
    (stats,) = f.stats()
    assert stats["tier"] == "compiled" and stats["calls"] is None


def test_a_failed_background_compile_warns_once_and_keeps_running_on_numpy(monkeypatch):
    def broken(fn, plan=None, in_process_only=False):
        if in_process_only:
            return None                  # nothing compiled in this process
        raise RuntimeError("kernel k3 did not compile")
    monkeypatch.setattr(backend, "_numba_program", broken)
    f = tracejit.jit(lambda x: np.tanh(x) * 2, tiered=True)
    x = np.linspace(-1, 1, 7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(x)
        f.wait_compiled()
        results = [f(x) for _ in range(3)]
    assert [w.category for w in caught] == [CompileWarning]
    assert "kernel k3 did not compile" in str(caught[0].message)
    for r in results:
        np.testing.assert_allclose(r, np.tanh(x) * 2)
    assert f.stats()[0]["tier"] == "numpy"


def test_the_numpy_tier_returns_fresh_arrays():
    f = tracejit.jit(lambda x: (x.T, x.reshape(-1), x * 2, x * 2), backend="numpy")
    x = np.arange(6.0).reshape(2, 3)
    outs = f(x)
    for i, o in enumerate(outs):
        assert not np.shares_memory(o, x)
        for other in outs[i + 1:]:
            assert not np.shares_memory(o, other)


@pytest.mark.parametrize("batch", [1, 16])
def test_a_training_step_on_the_numpy_tier_matches_the_compiled_step(batch):
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((6, 8)) * 0.3, rng.standard_normal((8, 3)) * 0.3
    x, y = rng.standard_normal((batch, 6)), rng.integers(0, 3, batch)

    def loss(w1, w2):
        return tracejit.nn.functional.cross_entropy(np.maximum(x @ w1, 0) @ w2, y)

    step = tracejit.value_and_grad(loss, argnums=(0, 1))
    on_numpy = tracejit.jit(step, backend="numpy")(w1, w2)
    compiled = tracejit.jit(step, tiered=False)(w1, w2)
    np.testing.assert_allclose(on_numpy[0], compiled[0], rtol=1e-12)
    for a, b in zip(on_numpy[1], compiled[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _large_and_small(x, w, t):
    h = np.tanh(x @ w)                     # 4096 elements: a kernel in every compiled stage
    z = h[:4, :5]                          # the loss on a corner of it: small groups
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return h, -(np.log(p) * t).sum(axis=1).mean()


def test_the_mixed_stage_compiles_the_large_groups_first_and_agrees_with_every_stage():
    from tracejit.codegen import Plan
    rng = np.random.default_rng(1)
    args = (rng.standard_normal((64, 32)), rng.standard_normal((32, 64)),
            rng.random((4, 5)))
    fn = tracejit.jit(_large_and_small).lower(*args).function
    plan = Plan(fusion_of(fn), numpy_max=0)
    stages = backend._stages(fn, plan)
    assert [tier for tier, _ in stages] == ["mixed", "compiled"]
    want = _large_and_small(*args)
    for tier, build in stages:
        got = build()(list(args))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=tier)
    mixed, full = (build().program.plan for _, build in stages)
    assert 0 < len(set(mixed.kernel_sources)) < len(set(full.kernel_sources))


def test_numpys_blas_leaves_a_core_to_a_background_compile_and_gets_it_back(monkeypatch):
    from tracejit.codegen import blas_threads
    fake = use_fake_blas(monkeypatch, 4)
    with blas_threads.one_core_for_compiling():
        assert fake.n == 3
        with blas_threads.one_core_for_compiling():      # a second program compiling at once
            assert fake.n == 3
        assert fake.n == 3
    assert fake.n == 4 and fake.history == [3, 4]
    single = FakeBlas(1)                                 # one thread already: left alone
    monkeypatch.setattr(blas_threads, "_numpy_openblas", lambda: single)
    with blas_threads.one_core_for_compiling():
        assert single.n == 1
    assert single.history == []
    monkeypatch.setattr(blas_threads, "_numpy_openblas", lambda: fake)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")      # the user's count is kept
    with blas_threads.one_core_for_compiling():
        assert fake.n == 4


def test_a_tiered_compile_lowers_numpys_blas_threads_only_while_it_runs(tmp_path, monkeypatch):
    fake = use_fake_blas(monkeypatch, 2)
    monkeypatch.setattr(tracejit.config, "cache_dir", str(tmp_path))
    f = tracejit.jit(lambda x: np.tanh(x) * 2 + x.sum(), tiered=True)
    x = np.ones((3, 4), np.float32)
    f(x)
    f.wait_compiled()
    assert fake.history == [1, 2] and fake.n == 2
    np.testing.assert_allclose(f(x), np.tanh(x) * 2 + x.sum(), rtol=1e-6)


def test_numpys_own_blas_is_found_and_its_thread_count_restored():
    from tracejit.codegen import blas_threads
    lib = blas_threads._numpy_openblas()
    if lib is None:
        pytest.skip("this NumPy is not built with a bundled OpenBLAS")
    get = blas_threads._function(lib, blas_threads._GET)
    before = get()
    with blas_threads.one_core_for_compiling():
        during = get()
    assert get() == before
    assert during == (before - 1 if before > 1 and not blas_threads._left_to_the_user()
                      else before)


def test_an_out_of_bounds_gather_raises_the_same_error_on_both_tiers():
    """The NumPy tier's gather reads a flattened array: NumPy's own message named its axis 0
    and size; both tiers name the user's line instead."""
    def f(a, i):
        return np.take_along_axis(a, i, axis=1)
    a, i = np.ones((3, 4)), np.array([[0, 5], [1, 2], [0, 0]])
    for tiered in (True, False):
        with pytest.raises(IndexError, match=r"out of bounds .* at .*test_tiered.py:\d+"):
            tracejit.jit(f, tiered=tiered)(a, i)
