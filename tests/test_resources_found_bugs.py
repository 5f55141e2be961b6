"""Resource bugs a long-running program hits: objects kept alive for the life of the process
by caches whose values held their own keys, and bookkeeping that grew by one per retrace."""
import functools
import gc
import weakref

import numpy as np

import tracejit
from tracejit.ir import Function


def _functions_alive() -> int:
    gc.collect()
    return sum(type(o) is Function for o in gc.get_objects())


def test_vjp_called_in_a_loop_does_not_keep_every_function_and_program_it_made():
    # program_of kept each Function's programs in a WeakKeyDictionary whose values (the
    # programs) refer to the Function: every vjp call on a function without a trace cache
    # (np.tanh takes no weak reference) kept its forward and backward Functions for good
    x = np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4)
    for _ in range(2):
        y, pull = tracejit.vjp(np.tanh, x)
        pull(np.ones_like(y))
    before = _functions_alive()
    for _ in range(6):
        y, pull = tracejit.vjp(np.tanh, x)
        np.testing.assert_allclose(pull(np.ones_like(y))[0], 1 - np.tanh(x) ** 2, rtol=1e-5)
    del y, pull
    assert _functions_alive() <= before


def test_a_lambda_given_to_jvp_is_freed_with_its_jitted_functions():
    # jvp's jits were kept in a WeakKeyDictionary by fn, and they close over fn: a new lambda
    # (or the closure jacfwd makes) each step stayed alive with its traces and programs
    x = np.linspace(-1, 1, 6).astype(np.float32)
    refs = []
    for k in range(3):
        f = lambda a, k=k: np.tanh(a) * (k + 1.0)       # noqa: E731
        out, tangent = tracejit.jvp(f, (x,), (np.ones_like(x),))
        np.testing.assert_allclose(tangent, (k + 1.0) * (1 - np.tanh(x) ** 2), rtol=1e-5)
        refs.append(weakref.ref(f))
    del f
    gc.collect()
    assert all(r() is None for r in refs)


def test_jvp_of_a_wrapper_of_a_function_runs_the_wrapper_not_the_wrapped():
    # (functools.wraps copies __dict__, where a plain function now keeps its jvp jits: a
    # guard of that fix, not a bug of its own)
    x = np.linspace(-1, 1, 5)

    def f(a):
        return np.sin(a)

    tracejit.jvp(f, (x,), (np.ones_like(x),))

    @functools.wraps(f)
    def g(a):
        return f(a) * 3.0

    out, tangent = tracejit.jvp(g, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(out, 3 * np.sin(x))
    np.testing.assert_allclose(tangent, 3 * np.cos(x))
    out, tangent = tracejit.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent, np.cos(x))


class _Config:                 # a static argument, hashed by identity
    pass


def test_a_static_argument_is_not_kept_alive_by_the_retrace_history():
    # Retraces kept every key ever traced (only the last is compared): each retrace for a
    # changed closure value grew it by one, the static values in the keys held alive
    x = np.ones(4, np.float32)
    scale = 1.0
    f = tracejit.jit(lambda a, cfg: a * scale, static_argnums=1)
    refs = []
    for k in range(4):
        scale = float(k + 1)
        cfg = _Config()
        np.testing.assert_allclose(f(x, cfg), x * scale)
        refs.append(weakref.ref(cfg))
    del cfg
    gc.collect()
    assert sum(r() is not None for r in refs) <= 1
    assert f.trace_count == 4


_LR = 0.1


def _scaled_tanh(x):
    return np.tanh(x) * _LR


def test_a_global_changed_every_step_does_not_pile_up_compile_threads():
    """Each trace started a background compile thread of its own: a learning rate changed
    every step (a trace each step) had 157 threads alive at once. One thread compiles in
    turn now, and a program jit dropped before its turn is skipped."""
    import threading
    import warnings
    global _LR
    f = tracejit.jit(_scaled_tanh)
    x = np.ones(16)
    most = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # (the RetraceWarning this pattern earns)
        for step in range(40):
            _LR = 0.1 * 0.9 ** step
            np.testing.assert_allclose(f(x), np.tanh(x) * _LR)
            most = max(most, sum(t.name.startswith("tracejit-compile")
                                 for t in threading.enumerate()))
    assert f.trace_count == 40 and most <= 1
