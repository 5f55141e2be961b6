"""Tiered programs whose NumPy tier runs a loop: how much the tier costs is counted (ops run a
call, a scan's body once per step), and a costly one answers the first call only, then waits
for the compile (tiered.WAIT_OPS), or is not used at all (COMPILE_AT_ONCE_OPS). Small matmuls
on the NumPy tier run on one BLAS thread (blas_threads.SMALL_MATMUL). Decisions are checked by
counts and by the calls each tier ran, never by timings."""
import warnings

import numpy as np
import pytest

import tracejit
from blas_helpers import use_fake_blas
from tracejit.codegen import blas_threads
from tracejit.codegen.numpy_tier import WHILE_STEPS, NumpyProgram
from tracejit.driver import CompileWarning, backend, tiered
from tracejit.driver.pipeline import optimized_of

STEPS = 300


def _rnn(w, h0, xs):
    # (arcsinh: a structure no other test compiles, so its kernels are not in this process)
    def cell(h, x):
        h = np.arcsinh(x @ w + h * np.float32(0.5))
        return h, h.sum(axis=1)
    h, ys = tracejit.scan(cell, h0, xs)
    return h, ys


def _rnn_expected(w, h0, xs):
    h, ys = h0, []
    for x in xs:
        h = np.arcsinh(x @ w + h * np.float32(0.5))
        ys.append(h.sum(axis=1))
    return h, np.stack(ys)


def _args(steps=STEPS):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((6, 5)) * 0.3).astype(np.float32)
    h0 = np.zeros((4, 5), np.float32)
    xs = rng.standard_normal((steps, 4, 6)).astype(np.float32)
    return w, h0, xs


def _program(f):
    (entry,) = f._cache.values()
    return entry.program


def _numpy_program(fn, *args):
    return NumpyProgram(optimized_of(tracejit.make_ir(fn)(*args)))


def test_the_numpy_tier_counts_a_scans_body_once_per_step():
    short, long = _numpy_program(_rnn, *_args(10)), _numpy_program(_rnn, *_args(STEPS))
    body_runs = (long.op_runs - short.op_runs) // (STEPS - 10)
    assert body_runs >= 3                                  # matmul, add, arcsinh, sum, ...
    assert long.op_runs == len(long.steps) + STEPS * body_runs
    assert long.op_runs >= tiered.WAIT_OPS > short.op_runs


def test_a_while_loop_counts_as_a_fixed_number_of_steps():
    def f(x):
        return tracejit.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2),
                                   (np.int64(0), x))[1]
    p = _numpy_program(f, np.ones(3))
    assert WHILE_STEPS > 1 and p.op_runs >= len(p.steps) + WHILE_STEPS * 2


def test_a_loop_heavy_program_answers_once_on_numpy_then_waits_for_its_compile(
        tmp_path, monkeypatch):
    monkeypatch.setattr(tracejit.config, "cache_dir", str(tmp_path))    # an empty disk cache
    args = _args()
    f = tracejit.jit(_rnn, tiered=True)
    first = f(*args)
    program = _program(f)
    assert program.waits and program.first.op_runs >= tiered.WAIT_OPS
    assert set(program.calls) == {"numpy", "compiled"}               # no mixed stage
    assert f.stats()[0]["calls"]["numpy"] == 1
    second = f(*args)                         # waits for the compile, then runs compiled
    (stats,) = f.stats()
    assert stats["tier"] == "compiled"
    assert stats["calls"] == {"numpy": 1, "compiled": 1}
    want = _rnn_expected(*args)
    untiered = tracejit.jit(_rnn, tiered=False)(*args)
    for a, b, c, w in zip(first, second, untiered, want):
        np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(b, c, rtol=1e-6, atol=1e-6)     # the same program
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)     # the tiers agree


def test_a_program_without_loops_still_runs_on_numpy_beside_its_compile(tmp_path, monkeypatch):
    monkeypatch.setattr(tracejit.config, "cache_dir", str(tmp_path))
    w, h0, xs = _args(3)

    def step(w, h0, xs):            # the same cell, unrolled: few ops
        h = h0
        for x in xs:
            h = np.arccosh(np.abs(x @ w + h * np.float32(0.5)) + np.float32(1))
        return h
    f = tracejit.jit(step, tiered=True)
    f(w, h0, xs)
    program = _program(f)
    assert not program.waits and program.first.op_runs < tiered.WAIT_OPS
    f.wait_compiled()
    np.testing.assert_allclose(f(w, h0, xs), tracejit.jit(step, tiered=False)(w, h0, xs),
                               rtol=1e-6)


def test_a_program_costlier_on_numpy_than_its_compile_is_compiled_at_once(
        tmp_path, monkeypatch):
    monkeypatch.setattr(tracejit.config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(backend, "COMPILE_AT_ONCE_OPS", 500)
    args = _args(200)
    f = tracejit.jit(_rnn, tiered=True)
    got = f(*args)
    (stats,) = f.stats()
    assert stats["tier"] == "compiled" and stats["calls"] is None     # as untiered
    for g, w in zip(got, _rnn_expected(*args)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_a_program_compiled_at_once_that_fails_to_compile_runs_on_numpy(monkeypatch):
    def broken(fn, plan=None, in_process_only=False):
        if in_process_only:
            return None
        raise RuntimeError("kernel k9 did not compile")
    monkeypatch.setattr(backend, "_numba_program", broken)
    monkeypatch.setattr(backend, "COMPILE_AT_ONCE_OPS", 500)
    args = _args(200)
    f = tracejit.jit(_rnn, tiered=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [f(*args) for _ in range(2)]
    assert [w.category for w in caught] == [CompileWarning]      # reported, never raised
    assert f.stats()[0]["tier"] == "numpy" and f.stats()[0]["calls"]["numpy"] == 2
    for r in results:
        for g, w in zip(r, _rnn_expected(*args)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_a_waiting_program_whose_compile_fails_keeps_running_on_numpy(monkeypatch):
    def broken(fn, plan=None, in_process_only=False):
        if in_process_only:
            return None
        raise RuntimeError("kernel k7 did not compile")
    monkeypatch.setattr(backend, "_numba_program", broken)
    args = _args()
    f = tracejit.jit(_rnn, tiered=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [f(*args) for _ in range(3)]
    assert [w.category for w in caught] == [CompileWarning]
    assert _program(f).waits
    assert f.stats()[0]["tier"] == "numpy" and f.stats()[0]["calls"]["numpy"] == 3
    for r in results:
        for g, w in zip(r, _rnn_expected(*args)):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.fixture
def fake_blas(monkeypatch):
    return use_fake_blas(monkeypatch, 4)


def test_one_thread_sections_nest_with_a_compile_and_restore_the_count(fake_blas):
    with blas_threads.one_core_for_compiling():
        blas_threads.enter_one_thread()
        blas_threads.enter_one_thread()         # nested (or another thread's): no change
        blas_threads.leave_one_thread()
        assert fake_blas.n == 1
        blas_threads.leave_one_thread()
        assert fake_blas.n == 3                 # back to the compile's count
    assert fake_blas.n == 4 and fake_blas.history == [3, 1, 3, 4]
    blas_threads.enter_one_thread()
    blas_threads.leave_one_thread()
    assert fake_blas.history == [3, 1, 3, 4, 1, 4]


def test_one_thread_sections_leave_a_users_thread_count_alone(fake_blas, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    blas_threads.enter_one_thread()
    blas_threads.leave_one_thread()
    assert fake_blas.history == []


def test_the_numpy_tier_runs_small_matmuls_on_one_blas_thread_and_large_ones_as_they_are(
        fake_blas):
    small = np.ones((8, 16), np.float32), np.ones((16, 4), np.float32)
    f = tracejit.jit(lambda a, b: a @ b, backend="numpy")
    np.testing.assert_array_equal(f(*small), small[0] @ small[1])
    assert fake_blas.history == [1, 4]
    n = 1 << 8                                   # n**3 > SMALL_MATMUL
    assert n ** 3 > blas_threads.SMALL_MATMUL
    large = np.ones((n, n), np.float32), np.ones((n, n), np.float32)
    np.testing.assert_array_equal(f(*large), large[0] @ large[1])
    assert fake_blas.history == [1, 4]
    # in a scan's body, once per step, with the result of the whole loop unchanged
    fake_blas.history.clear()
    args = _args(5)
    for g, w in zip(tracejit.jit(_rnn, backend="numpy")(*args), _rnn_expected(*args)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert fake_blas.history == [1, 4] * 5


def test_the_numpy_tier_keeps_widening_16_bit_matmuls():
    a = np.full((3, 2000), 0.1, np.float16)
    b = np.ones((2000, 2), np.float16)
    got = tracejit.jit(lambda a, b: a @ b, backend="numpy")(a, b)
    assert got.dtype == np.float16
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(got, want)      # accumulated in float32, rounded once


def test_a_waiting_compile_leaves_numpys_blas_threads_alone(fake_blas, tmp_path, monkeypatch):
    monkeypatch.setattr(tracejit.config, "cache_dir", str(tmp_path))

    def f(h0, xs):                  # no matmul: only a compile could set the count
        return tracejit.scan(lambda h, x: (np.sinh(h * x), h.max()), h0, xs)
    h0, xs = np.full(3, 0.5, np.float32), np.full((4 * STEPS, 3), 0.9, np.float32)
    j = tracejit.jit(f, tiered=True)
    j(h0, xs)
    assert _program(j).waits
    j(h0, xs)
    assert j.stats()[0]["calls"] == {"numpy": 1, "compiled": 1}
    assert fake_blas.history == []
