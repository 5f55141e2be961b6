"""Bugs found in tracejit.vmap by porting jax.vmap code: each test is the behaviour a user
expected, checked against NumPy run once per example (and against jax.vmap where JAX is
installed). Tiny shapes, few distinct programs: the file runs in a few seconds."""
import contextlib
import io
import os
import sys

import numpy as np
import pytest

import tracejit
from tracejit import lax, vmap

X = np.arange(12.0).reshape(4, 3) / 7.0 - 0.5


def per_example(f, *args):
    return np.stack([np.asarray(f(*a)) for a in zip(*args)])


def test_debug_print_with_a_format_spec_prints_each_example():
    # jax.vmap prints once per example; tracejit printed the whole batch as one array, so a
    # format spec ("{:.2f}") failed with "unsupported format string passed to ndarray"
    def f(x):
        tracejit.debug_print("s={:.2f}", x.sum())
        return x * 2
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = vmap(f)(X)
    np.testing.assert_allclose(out, X * 2)
    assert buf.getvalue().split() == [f"s={s:.2f}" for s in X.sum(axis=1)]


def test_cond_with_a_per_example_predicate_does_not_fail_in_the_branch_not_taken():
    # a guarded index (k < n) per example: each example alone is fine, but the batched cond
    # ran every branch on every example, and the take out of range raised IndexError
    K = np.array([0, 2, 5, 1])

    def f(x, k):
        return lax.cond(k < 3, lambda: x[k], lambda: np.float64(-1.0))
    np.testing.assert_allclose(vmap(f)(X, K), per_example(f, X, K))


def test_cond_with_a_per_example_predicate_does_not_factor_the_singular_matrix_it_avoids():
    A = np.stack([np.eye(2), np.zeros((2, 2)), 2 * np.eye(2)])

    def f(a):
        return lax.cond(np.abs(a).sum() > 0, lambda: np.linalg.inv(a), lambda: np.zeros((2, 2)))
    np.testing.assert_allclose(vmap(f)(A), per_example(f, A))


def test_cond_with_a_per_example_predicate_does_not_raise_an_int_to_the_power_it_guards():
    a, b = np.array([7, 8, 9]), np.array([1, -1, 2])

    def f(a, b):
        return lax.cond(b >= 0, lambda: a ** b, lambda: a * 0)
    np.testing.assert_array_equal(vmap(f)(a, b), per_example(f, a, b))


def test_in_axes_may_be_a_numpy_integer():
    # _check_axes_spec accepted np.int64(1); the call then failed with "'numpy.int64' object
    # is not iterable"
    out = vmap(lambda x: x * 2, in_axes=np.int64(1))(X)
    np.testing.assert_allclose(out, X.T * 2)


def test_size_errors_name_axis_size_and_each_mapped_argument():
    # the message listed bare sizes ("inconsistent sizes for the mapped axes: [4]" with
    # axis_size=5, "[2, 4]" for two arguments) and "an argument with shape ()": jax names them
    with pytest.raises(ValueError, match=r"axis_size 5; argument x: axis 0 of size 4") as e:
        vmap(lambda x: x, axis_size=5)(X)
    assert __file__ in str(e.value)
    with pytest.raises(ValueError, match=r"argument x: axis 1 of size 3; argument y\['b'\]: "
                                         r"axis 0 of size 4"):
        vmap(lambda x, y: x, in_axes=(1,))(X, y={"b": X})
    with pytest.raises(ValueError, match=r"in_axes 0 of argument w\[1\], of shape \(\)"):
        vmap(lambda v, w: v * w[1])(X, [X[:, 0], 2.0])


def test_calling_vmap_of_the_same_function_again_does_not_trace_again():
    # vmap(f)(x) in a loop built a new transform each call and traced f every time (jax
    # caches its transforms on the function); a kept vmap(f) traced once
    traces = []

    def f(x):
        traces.append(1)
        return np.sin(x).sum()
    for _ in range(3):
        np.testing.assert_allclose(vmap(f)(X), np.sin(X).sum(axis=1))
    for _ in range(2):
        np.testing.assert_allclose(vmap(f, in_axes=[1])(X.T), np.sin(X).sum(axis=1))
    assert len(traces) == 2
    assert vmap(np.cumsum) is vmap(np.cumsum) and vmap(np.sin) is vmap(np.sin)
    for _ in range(2):
        np.testing.assert_allclose(vmap(vmap(f))(X[None]), np.sin(X).sum(axis=1)[None])
    assert len(traces) == 3


def test_a_kept_transform_keeps_its_in_axes_when_the_callers_list_changes():
    def f(a, b):
        return a + b
    axes = [0, None]
    np.testing.assert_allclose(vmap(f, in_axes=axes)(X, X[0]), X + X[0])
    axes[1] = 0
    np.testing.assert_allclose(vmap(f, in_axes=axes)(X, X), X + X)
    np.testing.assert_allclose(vmap(f, in_axes=[0, None])(X, X[0]), X + X[0])


def test_the_transform_cache_follows_what_the_function_reads():
    scale = 2.0
    W = np.ones(3)

    def f(x):
        return x * W * scale
    np.testing.assert_allclose(vmap(f)(X), X * 2)
    W[:] = 3.0
    scale = 5.0
    np.testing.assert_allclose(vmap(f)(X), X * 15)
    # vmap of vmap(f) is not vmap(f), nor is another in_axes
    np.testing.assert_allclose(vmap(vmap(f))(X[None]), X[None] * 15)
    np.testing.assert_allclose(vmap(f, out_axes=1)(X), X.T * 15)


def test_an_unmapped_int_may_be_a_count_of_tile_split_repeat_and_broadcast_to():
    # jax.vmap passes an in_axes=None int as it is; tracejit traces it, then again with it
    # static on a ConcretizationError, but np.tile(x, n) of a traced n raised TypeError
    # "iteration over a 0-d traced array" (np.resize, np.split, np.broadcast_to too)
    def f(x, n):
        return np.tile(x, n), np.split(np.resize(x, 2 * n), n)[0], np.broadcast_to(x[0], n)
    out = vmap(f, in_axes=(0, None))(X, 2)
    for got, want in zip(out, [np.stack(w) for w in zip(*[f(x, 2) for x in X])]):
        np.testing.assert_allclose(got, want)
    with pytest.raises(tracejit.ConcretizationError, match="Python int"):
        tracejit.jit(lambda x, n: np.tile(x, n))(X[0], 2)


def test_an_unmapped_dtype_is_passed_as_it_is():
    # jax.vmap passes an in_axes=None leaf as it is; a scalar type (np.int32: its class has
    # the __array__ of its instances) went to jit as an argument: "argument d has type type,
    # which is not an array"
    f = vmap(lambda x, d: x.astype(d), in_axes=(0, None))
    assert f(X, np.int32).dtype == np.int32 and f(X, np.float16).dtype == np.float16
    np.testing.assert_allclose(tracejit.grad(lambda x, d: x.astype(d).sum())(X, np.float32),
                               np.ones_like(X))


def test_vmap_runs_under_disable_jit(monkeypatch):
    # config.disable_jit (debugging: run the Python) made vmap fail with "RuntimeError: no
    # trace is active"; grad ran. Now each example runs in Python and the results stack.
    monkeypatch.setattr(tracejit.config, "disable_jit", True)
    seen = []

    def f(x, w):
        seen.append(type(x))
        return {"a": x * w, "b": w}
    out = vmap(f, in_axes=(1, None), out_axes={"a": 1, "b": None})(X, 2.0)
    np.testing.assert_allclose(out["a"], X * 2)
    assert out["b"] == 2.0 and seen == [np.ndarray] * 3
    np.testing.assert_allclose(vmap(tracejit.grad(lambda x: (x ** 2).sum()))(X), 2 * X)


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


tracejit.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))


def test_in_axes_and_out_axes_may_be_a_registered_class_as_its_own_prefix():
    # jax takes in_axes=(Pair(0, None),) for a Pair argument; tracejit said "in_axes <Pair
    # object> does not match the structure of args[0], Pair"
    out = vmap(lambda p: Pair(p.a * p.b, p.b), in_axes=(Pair(0, None),),
               out_axes=Pair(1, None))(Pair(X, X[0]))
    np.testing.assert_allclose(out.a, (X * X[0]).T)
    np.testing.assert_allclose(out.b, X[0])


def test_np_roll_takes_a_shift_per_example():
    # jnp.roll takes a traced shift; np.roll of one was "np.atleast_1d of a list or tuple
    # holding traced values ... not supported"
    S = np.array([0, 1, -1, 5])
    np.testing.assert_allclose(vmap(np.roll)(X, S), per_example(np.roll, X, S))


def test_a_slice_with_a_per_example_bound_says_how_to_read_the_window():
    # jax's x[i:i + 2] needs lax.dynamic_slice; tracejit's error said x was "a NumPy array or
    # a Python list that is not traced", of a mapped (traced) x
    I = np.array([0, 1, 1, 0])
    with pytest.raises(tracejit.ConcretizationError, match=r"slice with a traced bound(.|\n)*"
                                                           r"i \+ np.arange\(n\)") as e:
        vmap(lambda x, i: x[i:i + 2])(X, I)
    assert __file__ in str(e.value) and "not traced" not in str(e.value)
    np.testing.assert_allclose(vmap(lambda x, i: x[i + np.arange(2)])(X, I),
                               per_example(lambda x, i: x[i:i + 2], X, I))
    np.testing.assert_allclose(vmap(lambda x, i: x[i:i + 2], in_axes=(0, None))(X, 1), X[:, 1:])


def _jax():
    """jax, where it is installed and already imported by this session's other tests (or
    TRACEJIT_TEST_JAX=1): importing it takes longer than this whole file."""
    if "jax" not in sys.modules and os.environ.get("TRACEJIT_TEST_JAX") != "1":
        pytest.skip("jax is not imported yet (TRACEJIT_TEST_JAX=1 imports it)")
    return pytest.importorskip("jax"), pytest.importorskip("jax.numpy")


def test_against_jax():
    jax, jnp = _jax()
    jax.config.update("jax_enable_x64", True)
    K = np.array([0, 2, 5, 1])
    np.testing.assert_allclose(
        vmap(lambda x, k: lax.cond(k < 3, lambda: x[k], lambda: np.float64(-1.0)))(X, K),
        jax.vmap(lambda x, k: jax.lax.cond(k < 3, lambda: x[k], lambda: -1.0))(X, K))
    np.testing.assert_allclose(vmap(lambda x: x * 2, in_axes=np.int64(1))(X),
                               jax.vmap(lambda x: x * 2, in_axes=1)(X))
    S = np.array([0, 1, -1, 5])
    np.testing.assert_allclose(vmap(np.roll)(X, S), jax.vmap(jnp.roll)(X, S))
