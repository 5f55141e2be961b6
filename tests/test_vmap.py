"""tracejit.vmap as JAX users call it, checked against NumPy run once per example: in_axes and
out_axes, pytrees, nesting, composition with grad and jit, control flow, indexing, and the
errors for what cannot be mapped."""
import numpy as np
import pytest

import tracejit
from tracejit import lax, vmap

rng = np.random.default_rng(0)
X = rng.normal(size=(4, 3))
W = rng.normal(size=(3, 2))


def stacked(f, *args):
    return np.stack([np.asarray(f(*a)) for a in zip(*args)])


def test_shared_weights_are_not_copied_per_example_and_the_batch_is_one_matmul():
    def layer(x, W):
        return np.tanh(x @ W)
    f = vmap(layer, in_axes=(0, None))
    np.testing.assert_allclose(f(X, W), np.tanh(X @ W), rtol=1e-12)
    ir = str(tracejit.make_ir(f)(X, W))
    assert ir.count("matmul") == 1 and "scan" not in ir and "broadcast_in_dim %W" not in ir


def test_in_axes_and_out_axes_move_the_mapped_axis():
    f = vmap(lambda a, b: a * b.sum(), in_axes=(1, -1), out_axes=1)
    got = f(X.T.copy(), X.T.copy())
    np.testing.assert_allclose(got, (X * X.sum(axis=1, keepdims=True)).T, rtol=1e-12)


def test_pytree_arguments_take_in_axes_prefixes_and_outputs_their_own_out_axes():
    params = {"w": W, "scale": 2.0}

    def f(p, x):
        y = x @ p["w"] * p["scale"]
        return {"y": y, "norm": np.sqrt((y * y).sum())}
    out = vmap(f, in_axes=({"w": None, "scale": None}, 0),
               out_axes={"y": 1, "norm": 0})(params, X)
    np.testing.assert_allclose(out["y"], (X @ W * 2.0).T, rtol=1e-12)
    np.testing.assert_allclose(out["norm"], np.linalg.norm(X @ W * 2.0, axis=1), rtol=1e-12)


def test_keyword_arguments_are_mapped_over_axis_0():
    np.testing.assert_allclose(vmap(lambda x, y: x - y)(X, y=X[:, ::-1]), X - X[:, ::-1])


def test_nested_vmap_gives_all_pairwise_distances():
    dist = vmap(vmap(lambda a, b: np.sqrt(((a - b) ** 2).sum()), in_axes=(None, 0)),
                in_axes=(0, None))
    want = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(dist(X, X), want, rtol=1e-12, atol=1e-12)


def loss(w, x):
    return np.log1p(np.exp(np.sin(x @ w))).sum()


def test_per_example_gradients_match_finite_differences():
    w = rng.normal(size=3)
    got = vmap(tracejit.grad(loss), in_axes=(None, 0))(w, X)
    eps = 1e-6
    for i, x in enumerate(X):
        fd = [(loss(w + eps * e, x) - loss(w - eps * e, x)) / (2 * eps) for e in np.eye(3)]
        np.testing.assert_allclose(got[i], fd, rtol=1e-6, atol=1e-8)


def test_grad_of_a_vmapped_function_sums_the_examples_gradients():
    w = rng.normal(size=3)
    total = tracejit.grad(lambda w: vmap(loss, in_axes=(None, 0))(w, X).sum())(w)
    np.testing.assert_allclose(total, stacked(lambda x: tracejit.grad(loss)(w, x), X).sum(0),
                               rtol=1e-12)


def test_vmap_inside_jit_traces_once_per_signature():
    traces = []

    @tracejit.jit
    def f(xs):
        traces.append(1)
        return vmap(lambda x: np.sort(x)[::-1].cumsum())(xs)
    for _ in range(2):
        np.testing.assert_allclose(f(X), np.cumsum(np.sort(X, axis=1)[:, ::-1], axis=1))
    assert len(traces) == 1


def test_indexing_with_a_per_example_index_reads_each_examples_own_element():
    i = np.array([2, 0, -1, 2])
    pick = vmap(lambda x, k: x[k])
    np.testing.assert_allclose(pick(X, i), X[np.arange(4), i])
    assert "scan" not in str(tracejit.make_ir(pick)(X, i))      # one gather, not a loop
    with pytest.raises(IndexError, match="out of bounds"):      # not another example's row
        pick(X, np.array([0, 0, 3, 0]))
    np.testing.assert_allclose(vmap(lambda k: X[0][k] * 2)(i), X[0][i] * 2)

    def put(x, k):
        y = x.copy()
        y[k] = -1.0
        return y
    want = X.copy()
    want[np.arange(4), i] = -1.0
    np.testing.assert_allclose(vmap(put)(X, i), want)


def test_control_flow_with_a_per_example_predicate_follows_each_examples_branch():
    def f(x):
        y = lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x)
        n, z = lax.while_loop(lambda s: s[0] < 3.0, lambda s: (s[0] + 0.5 + np.abs(s[1]).max(),
                                                              s[1] * 0.5), (0.0, y))
        c, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, z)
        return n, c, ys
    got = vmap(f)(X)
    want = [f(x) for x in X]
    for k in range(3):
        np.testing.assert_allclose(got[k], np.stack([w[k] for w in want]), rtol=1e-12)


def test_a_custom_vjp_keeps_its_rule_under_vmap():
    @tracejit.custom_vjp
    def f(x):
        return np.sin(x)
    f.defvjp(lambda x: (np.sin(x), x), lambda x, g: (g * 100.0,))
    g = tracejit.grad(lambda xs: vmap(f)(xs).sum())(X)
    np.testing.assert_allclose(g, np.full_like(X, 100.0))


def test_an_unmapped_python_number_can_set_a_loop_count():
    def f(x, n):
        for _ in range(n):
            x = x * 2
        return x
    np.testing.assert_allclose(vmap(f, in_axes=(0, None))(X, 3), X * 8)


def test_batch_of_one_and_axis_size_without_mapped_arguments():
    np.testing.assert_allclose(vmap(np.cumsum)(X[:1]), np.cumsum(X[:1], axis=1))
    out = vmap(lambda x: x.sum(), in_axes=None, axis_size=3)(X[0])
    np.testing.assert_allclose(out, np.full(3, X[0].sum()))


@pytest.mark.parametrize("call, match", [
    (lambda: vmap(lambda a, b: a + b)(X, X[:3]), "inconsistent sizes"),
    (lambda: vmap(lambda a: a, in_axes=(0, None))(X), "in_axes has 2 entries"),
    (lambda: vmap(lambda a: a, in_axes=2)(X), "in_axes 2"),
    (lambda: vmap(lambda a: a, out_axes=None)(X), "out_axes is None"),
    (lambda: vmap(lambda a: a, in_axes=None)(X), "axis_size"),
    (lambda: vmap(lambda a: a, axis_name="i"), "axis_name"),
    (lambda: vmap(3), "expected a function"),
    (lambda: vmap(lambda a: a, in_axes=0.5), "in_axes must be ints"),
])
def test_what_cannot_be_mapped_is_a_clear_error(call, match):
    with pytest.raises((ValueError, TypeError, NotImplementedError), match=match):
        call()


def newton_sqrt(a):
    return lax.while_loop(lambda s: np.abs(s[0] * s[0] - a) > 1e-12 * a,
                          lambda s: (0.5 * (s[0] + a / s[0]), s[1] + 1), (a, 0))


def test_a_loop_whose_predicate_differs_per_example_runs_once_for_the_whole_batch():
    a = np.array([0.5, 2.0, 9.0, 1e4])
    f = vmap(newton_sqrt)
    roots, steps = f(a)
    want = [newton_sqrt(x) for x in a]
    np.testing.assert_array_equal(roots, [w[0] for w in want])    # each stopped at its step
    np.testing.assert_array_equal(steps, [w[1] for w in want])
    ir = str(tracejit.make_ir(f)(a))
    assert ir.count("while_loop") == 1 and "scan" not in ir


@pytest.mark.parametrize("body", [
    lambda x, s: (s[0] + 1, s[1] + x[s[0]]),          # an index a finished example overruns
    lambda x, s: (s[0] + 1, s[1] + 12 // (3 - s[0])),  # a divisor a finished example zeroes
])
def test_a_loop_that_could_fail_past_an_examples_end_runs_per_example(body):
    def f(x, n):
        return lax.while_loop(lambda s: s[0] < n, lambda s: body(x, s), (0, x[0] * 0))
    xs, ns = np.arange(12).reshape(4, 3), np.array([1, 3, 2, 0])
    got = tracejit.jit(vmap(f), backend="interpreter")(xs, ns)
    for g, w in zip(got, zip(*[f(x, n) for x, n in zip(xs, ns)])):
        np.testing.assert_array_equal(g, w)
