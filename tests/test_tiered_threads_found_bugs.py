"""Bugs found around tiered programs' background compile, waiting programs, KeyboardInterrupt
and fork (driver/tiered.py, codegen/blas_threads.py, codegen/numpy_tier.py). Hangs are
guarded by a thread join or a child's wait with a generous timeout; nothing is timed."""
import contextlib
import os
import threading
import time
import warnings
import weakref

import numpy as np
import pytest

import tracejit
from blas_helpers import use_fake_blas
from tracejit.codegen import blas_threads
from tracejit.driver import CompileWarning, tiered

HANG = 60          # seconds: far more than any of these takes


class _Compiled:
    """Stands for a compiled stage."""

    guarded = None

    def __call__(self, leaves):
        return ["compiled"]

    def wait(self):
        pass


def _program(waits=False):
    return tiered.TieredProgram("probe", lambda leaves: ["numpy"],
                                [("compiled", _Compiled)], waits=waits)


def _call_in_thread(program, leaves=()):
    out = []
    t = threading.Thread(target=lambda: out.append(program(list(leaves))), daemon=True)
    t.start()
    t.join(HANG)
    assert not t.is_alive(), "the call waits for good"
    return out[0]


def test_an_error_setting_up_one_background_compile_warns_and_later_programs_still_compile(
        monkeypatch):
    # Raised outside the stages (here: entering the BLAS thread section), it ended the one
    # compile thread: the next program's compile never ran, and its calls waited for good.
    real = tiered.one_core_for_compiling
    failures = []

    @contextlib.contextmanager
    def broken_once():
        if not failures:
            failures.append(1)
            raise RuntimeError("no BLAS thread count here")
        with real():
            yield
    monkeypatch.setattr(tiered, "one_core_for_compiling", broken_once)
    first = _program()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert first([]) == ["numpy"]
        assert first._done.wait(HANG)
    assert [w.category for w in caught] == [CompileWarning]
    assert "no BLAS thread count here" in str(caught[0].message)
    assert first([]) == ["numpy"] and first.tier == "numpy"
    later = _program(waits=True)
    assert later([]) == ["numpy"]
    assert _call_in_thread(later) == ["compiled"]       # compiled, the thread still serves


class _TooEarlyInterrupt(weakref.WeakSet):
    def add(self, item):
        raise KeyboardInterrupt


def test_a_keyboard_interrupt_as_a_waiting_programs_first_call_ends_never_hangs_later_calls(
        monkeypatch):
    # Interrupted inside _start (before the compile was handed to the compile thread), the
    # program's stages were gone and nothing would ever set it done: the next call waited
    # for good (and exit, had it been listed as pending).
    monkeypatch.setattr(tiered, "_pending", _TooEarlyInterrupt())
    program = _program(waits=True)
    with pytest.raises(KeyboardInterrupt):
        program([])
    monkeypatch.undo()
    assert _call_in_thread(program) == ["numpy"]       # correct, on the NumPy tier
    assert program.wait() is None


@pytest.fixture
def fake_blas(monkeypatch):
    return use_fake_blas(monkeypatch, 4)


def test_a_keyboard_interrupt_in_a_numpy_tier_matmul_leaves_numpys_blas_threads_as_they_were(
        fake_blas):
    # The small-matmul section was counted in before the interrupt and never counted out:
    # NumPy's BLAS stayed on one thread after the next compile, for the rest of the process.
    f = tracejit.jit(lambda a, b: a @ b, backend="numpy")
    a, b = np.ones((3, 4), np.float32), np.ones((4, 2), np.float32)
    fake_blas.interrupt = True
    with pytest.raises(KeyboardInterrupt):
        f(a, b)
    assert fake_blas.n == 4
    np.testing.assert_array_equal(f(a, b), a @ b)
    assert fake_blas.n == 4
    with blas_threads.one_core_for_compiling():
        assert fake_blas.n == 3
    assert fake_blas.n == 4


def test_a_fork_beside_a_numpy_tier_running_small_matmuls_leaves_the_child_working(fake_blas):
    # Another thread inside a small-matmul section, holding blas_threads' lock (held across
    # the BLAS calls, which release the GIL): the child's first small matmul waited for that
    # lock for good, and its BLAS stayed on one thread.
    f = tracejit.jit(lambda a, b: np.tanh(a @ b), backend="numpy")
    a, b = np.full((3, 4), 0.1, np.float32), np.ones((4, 2), np.float32)
    want = np.tanh(a @ b)
    inside, release = threading.Event(), threading.Event()

    def other_thread():
        blas_threads.enter_one_thread()
        with blas_threads._lock:
            inside.set()
            release.wait(HANG)
        blas_threads.leave_one_thread()
    t = threading.Thread(target=other_thread, daemon=True)
    t.start()
    try:
        assert inside.wait(HANG) and fake_blas.n == 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)     # fork with threads
            pid = os.fork()
        if pid == 0:                                     # the child
            code = 1
            try:
                ok = np.allclose(f(a, b), want) and fake_blas.n == 4
                code = 0 if ok else 2
            finally:
                os._exit(code)
        deadline = time.monotonic() + HANG
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        if not done:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        assert done, "the child waits for good"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        release.set()
        t.join(HANG)
    assert fake_blas.n == 4


def test_a_matmul_inside_a_scan_body_sets_up_numbas_blas_before_its_kernel_first_runs(
        monkeypatch):
    # Only a top-level matmul group counted as a matmul: the scan's kernel called gemm
    # without the set-up, so its first call imported all of scipy.linalg on the caller's
    # thread (a fork beside that call left the child waiting on the import lock) and SciPy's
    # BLAS kept its threads.
    from tracejit.codegen import blas
    real, calls = blas.resolve_blas, []

    def recorded():
        calls.append(1)
        real()
    monkeypatch.setattr(blas, "resolve_blas", recorded)

    def f(w, h0, xs):
        return tracejit.scan(lambda h, x: (np.sinh(x @ w) + h, h.min()), h0, xs)
    rng = np.random.default_rng(3)
    w, h0 = rng.standard_normal((3, 2)), np.zeros((2, 2))
    xs = rng.standard_normal((4, 2, 3))
    h, ys = tracejit.jit(f, tiered=False)(w, h0, xs)
    assert calls
    want_h, want_ys = h0, []
    for x in xs:
        want_ys.append(want_h.min())
        want_h = np.sinh(x @ w) + want_h
    np.testing.assert_allclose(h, want_h, rtol=1e-12)
    np.testing.assert_allclose(ys, want_ys, rtol=1e-12)
