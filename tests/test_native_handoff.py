"""Parallel kernels handed to worker threads in native code (codegen/handoff.py): the same
results as one block, whichever thread takes which block, after workers went to sleep, and
while other threads call the same program."""
import threading
import time

import numpy as np

from numba import types

import tracejit
from tracejit.codegen.handoff import trampoline_source


def _layer(w, b, x, scale):
    return np.maximum(x @ w + b, 0) * scale, np.tanh(x * scale).sum(axis=1)


def _arguments(n=512):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((n, n)).astype(np.float32) / 16,
            rng.standard_normal(n).astype(np.float32),
            rng.standard_normal((n, n)).astype(np.float32), np.float32(0.5))


def _jobs(f):
    """The kernels the program hands off natively, once its hand-off is built (in the
    background: until then they run on threads.py's pool)."""
    runner = f._cache[next(iter(f._cache))].program.program.runner
    runner.ready.wait()
    return runner.jobs


def test_parallel_kernels_run_through_the_native_hand_off_with_the_results_of_numpy():
    args = _arguments()
    f = tracejit.jit(_layer, tiered=False)
    want = _layer(*args)
    for g, w in zip(f(*args), want):                       # on threads.py's pool
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    assert _jobs(f), "no kernel of this program was handed off natively"
    for g, w in zip(f(*args), want):                       # handed off natively
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    time.sleep(0.05)                 # the workers stop spinning and sleep: the next call wakes them
    for g, w in zip(f(*args), want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def test_threads_calling_one_program_at_once_get_their_own_results():
    f = tracejit.jit(_layer, tiered=False)
    inputs = [_arguments()[:2] + (np.full((512, 512), i, np.float32), np.float32(0.5))
              for i in range(4)]
    f(*inputs[0])
    assert _jobs(f)
    errors = []

    def work(args):
        try:
            for _ in range(20):
                for g, w in zip(f(*args), _layer(*args)):
                    np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-4)
        except BaseException as e:     # noqa: B036 (reported in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(a,)) for a in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_a_trampoline_rebuilds_arrays_and_scalars_of_every_kind():
    sig = (types.float64[:, ::1], types.bool_[::1], types.int32[:, :, ::1],
           types.Array(types.float32, 0, "C"), types.float32,
           types.float64, types.boolean, types.int32, types.int64, types.int64, types.int64)
    src = trampoline_source(sig)
    compile(src, "<trampoline>", "exec")       # valid Python
    assert src.count("carray(") == 5           # the buffer and four arrays
    assert "np.float32(0)), ())" in src         # a 0-d array
    assert "bits_to_f32" in src and "bits_to_f64" in src and "!= 0" in src
    assert trampoline_source((types.float64[:, :], types.int64, types.int64)) is None  # not C
