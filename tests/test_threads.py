"""Threads making first calls at once: each function is traced once, every thread gets NumPy's
result, and the generated code they share stays usable (cache.lock, Program, JittedFunction's
lock). Before the locks, four such threads failed on every run ("_explain_ambiguous must raise
an exception", "compilation disabled") and left the shared entry broken for the process."""
import threading

import numpy as np
import pytest

import tracejit
from tracejit.codegen import cache, cache_folder

THREADS = 8


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    """A cache folder of the test's own, so the first round compiles from nothing."""
    monkeypatch.setattr(tracejit.config, "cache_dir", str(tmp_path))
    monkeypatch.setattr(cache_folder, "_decided", {})
    return tmp_path


def _first_calls_at_once(functions) -> list:
    """Call ``functions[i](x_i)`` in thread i, all released together; the errors raised."""
    barrier = threading.Barrier(len(functions))
    errors = []

    def work(i):
        x = np.arange(5, dtype=np.float32) + i
        try:
            barrier.wait()
            np.testing.assert_array_equal(functions[i](x), x * 2 + 1)
        except BaseException as e:     # noqa: B036 (reported by the test, in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(functions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()          # no time limit: a busy machine compiles slowly; CI's limit stops a hang
    return errors


def test_threads_making_first_calls_at_once_get_numpys_results(cache_root, monkeypatch):
    for _ in range(4):
        # Each round starts with no module loaded: the first compiles, the later ones load the
        # same generated code from the disk cache (the cheap way to race on it again).
        monkeypatch.setattr(cache, "_MODULES", {})
        shared = tracejit.jit(lambda x: x * 2 + 1)
        twins = [tracejit.jit(lambda x: x * 2 + 1) for _ in range(THREADS // 2)]  # same code
        errors = _first_calls_at_once([shared] * (THREADS // 2) + twins)
        if errors:
            raise errors[0]
        assert shared.trace_count == 1
        assert all(f.trace_count == 1 for f in twins)
    later = tracejit.jit(lambda x: x * 2 + 1)
    np.testing.assert_array_equal(later(np.ones(3, np.float32)), np.full(3, 3, np.float32))
