"""The public autodiff API: JAX's semantics for grad, value_and_grad, vjp, jvp, jacfwd, jacrev,
checkpoint and custom_vjp, and how the transforms compose with each other and with jit."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
import tracejit as tj
from gradcheck import ijit

x3 = np.array([0.5, -1.0, 2.0])

# These tests compile through the default backend (Numba); the others pin down semantics and
# run on the interpreter to stay fast.
COMPILED = {"test_grad_of_a_scalar_function", "test_grad_of_jit",
            "test_jit_of_grad_compiles_forward_and_backward_together",
            "test_repeated_grad_calls_do_not_retrace", "test_custom_vjp_rule_is_the_one_used",
            "test_vjp_runs_the_forward_now_and_the_backward_later"}


@pytest.fixture(autouse=True)
def _backend(request, monkeypatch):
    if request.node.name not in COMPILED:
        monkeypatch.setattr(tracejit.config, "backend", "interpreter")


def cube_sum(x):
    return np.sum(x * x * x)


def test_grad_of_a_scalar_function():
    np.testing.assert_allclose(tj.grad(cube_sum)(x3), 3 * x3 ** 2)


def test_value_and_grad_returns_the_value_too():
    v, g = tj.value_and_grad(cube_sum)(x3)
    np.testing.assert_allclose(v, np.sum(x3 ** 3))
    np.testing.assert_allclose(g, 3 * x3 ** 2)


def test_argnums_tuple_gives_a_tuple_of_gradients():
    gx, gy = tj.grad(lambda x, y, z: np.sum(x * y * z), argnums=(0, 2))(x3, 2 * x3, 3 * x3)
    np.testing.assert_allclose(gx, 6 * x3 * x3)
    np.testing.assert_allclose(gy, 2 * x3 * x3)


def test_gradient_of_a_pytree_has_the_same_structure():
    params = {"w": np.ones((2, 3)), "b": [np.zeros(3), (np.float64(2.0),)]}

    def loss(p, x):
        return np.sum(np.tanh(x @ p["w"] + p["b"][0]) * p["b"][1][0])

    g = tj.grad(loss)(params, np.ones((4, 2)))
    assert set(g) == {"w", "b"} and isinstance(g["b"], list) and isinstance(g["b"][1], tuple)
    assert g["w"].shape == (2, 3) and g["b"][0].shape == (3,)
    expected = 4 * 2 * (1 - np.tanh(2.0) ** 2)
    np.testing.assert_allclose(g["b"][0], [expected] * 3)


def test_has_aux_returns_the_auxiliary_output_undifferentiated():
    def loss(x):
        return np.sum(x * x), {"mean": x.mean(), "n": x.shape[0]}

    g, aux = tj.grad(loss, has_aux=True)(x3)
    np.testing.assert_allclose(g, 2 * x3)
    np.testing.assert_allclose(aux["mean"], x3.mean())
    (v, aux2), g2 = tj.value_and_grad(loss, has_aux=True)(x3)
    np.testing.assert_allclose(v, np.sum(x3 * x3))


def test_integer_input_has_no_gradient_and_says_so():
    with pytest.raises(TypeError, match="int64.*floating-point"):
        tj.grad(lambda x: np.sum(x * 1.0))(np.arange(3))
    with pytest.raises(TypeError, match="floating-point"):
        tj.grad(lambda x, n: np.sum(x * n), argnums=1)(x3, 2)


def test_integer_inputs_not_differentiated_are_fine():
    g = tj.grad(lambda x, i: np.sum(x[i]))(x3, np.array([0, 0, 2]))
    np.testing.assert_allclose(g, [2.0, 0.0, 1.0])


def test_grad_of_a_non_scalar_output_is_an_error():
    with pytest.raises(TypeError, match="scalar"):
        tj.grad(lambda x: x * 2.0)(x3)


def test_repeated_grad_calls_do_not_retrace():
    g = tj.grad(cube_sum)
    for _ in range(3):
        g(x3)
    assert g._jitted.trace_count == 1


def test_jit_of_grad_compiles_forward_and_backward_together():
    g = tj.jit(tj.grad(cube_sum))
    np.testing.assert_allclose(g(x3), 3 * x3 ** 2)
    ir = g.lower(x3).ir
    assert "mul" in ir and "func @" in ir


def test_grad_of_jit():
    np.testing.assert_allclose(tj.grad(tj.jit(cube_sum))(x3), 3 * x3 ** 2)


def test_grad_of_grad():
    f = lambda s: s * s * s * s  # noqa: E731
    np.testing.assert_allclose(tj.grad(tj.grad(f))(2.0), 12 * 4.0)
    np.testing.assert_allclose(tj.grad(tj.grad(tj.grad(f)))(2.0), 24 * 2.0)


def test_inner_grad_depends_on_a_closed_over_outer_value():
    # d/dy [d/dx (x * y)] = d/dy y = 1
    out = tj.grad(lambda y: tj.grad(lambda x: x * y * y)(1.0))(3.0)
    np.testing.assert_allclose(out, 6.0)


def test_jvp_of_grad_is_a_hessian_vector_product():
    v = np.array([1.0, 0.0, -1.0])
    _, hvp = tj.jvp(tj.grad(cube_sum), (x3,), (v,))
    np.testing.assert_allclose(hvp, 6 * x3 * v)


def test_jacfwd_and_jacrev_agree_and_give_the_hessian():
    f = lambda x: np.tanh(x) * x[::-1]  # noqa: E731
    jf, jr = tj.jacfwd(f)(x3), tj.jacrev(f)(x3)
    np.testing.assert_allclose(jf, jr, rtol=1e-12)
    hess = tj.jacfwd(tj.jacrev(cube_sum))(x3)
    np.testing.assert_allclose(hess, np.diag(6 * x3), atol=1e-12)


def test_make_ir_of_grad_prints_the_backward_program():
    text = str(tj.make_ir(tj.grad(lambda x: np.sum(np.tanh(x))))(x3))
    assert "tanh" in text and "sub" in text and text.startswith("func @")


def test_vjp_runs_the_forward_now_and_the_backward_later():
    def f(x, y):
        return {"a": np.sin(x) * y, "b": y.sum()}

    out, pull = tj.vjp(f, x3, 2 * x3)
    np.testing.assert_allclose(out["a"], np.sin(x3) * 2 * x3)
    cx, cy = pull({"a": np.ones(3), "b": np.float64(1.0)})
    np.testing.assert_allclose(cx, np.cos(x3) * 2 * x3)
    np.testing.assert_allclose(cy, np.sin(x3) + 1)


def test_standalone_vjp_of_a_reshape_feeding_a_matmul_is_initialised():
    # The reshape is both the matmul's operand view and a residual of the forward program.
    x = np.arange(24.).reshape(4, 2, 3)
    w = np.ones((6, 5))
    _, pull = tj.vjp(lambda x, w: x.reshape(4, 6) @ w, x, w)
    gx, gw = pull(np.ones((4, 5)))
    np.testing.assert_array_equal(gw, x.reshape(4, 6).T @ np.ones((4, 5)))
    np.testing.assert_array_equal(gx, np.full((4, 2, 3), 5.0))


def test_standalone_vjp_of_a_dot_of_two_slices_matches_numpy():
    a = np.random.default_rng(0).standard_normal((4, 2))
    _, pull = tj.vjp(lambda x: np.dot(x[:2], x[2:]), a)
    ct = np.random.default_rng(1).standard_normal((2, 2))
    expected = np.zeros_like(a)
    expected[:2] = ct @ a[2:].T
    expected[2:] = a[:2].T @ ct
    np.testing.assert_allclose(pull(ct)[0], expected, rtol=1e-12)


def test_vjp_inside_jit():
    def f(x, ct):
        _, pull = tj.vjp(np.sin, x)
        return pull(ct)[0]
    np.testing.assert_allclose(tj.jit(f)(x3, np.ones(3)), np.cos(x3))


def test_jvp_with_pytrees():
    prim, tan = tj.jvp(lambda p: p["a"] * p["b"], ({"a": x3, "b": 2 * x3},),
                       ({"a": np.ones(3), "b": np.zeros(3)},))
    np.testing.assert_allclose(tan, 2 * x3)


# -- checkpoint ---------------------------------------------------------------------------------
@tj.checkpoint
def block(w, h):
    return np.tanh(h @ w) + h


def test_checkpoint_as_a_decorator_calls_through_outside_a_trace():
    w, h = np.eye(3), np.ones((2, 3))
    np.testing.assert_allclose(block(w, h), np.tanh(h) + h)


def test_checkpoint_recomputes_behind_an_optimization_barrier():
    w, h = np.eye(3) * 0.5, np.ones((2, 3))
    loss = lambda w, h: np.sum(block(w, block(w, h)))  # noqa: E731
    text = str(tj.make_ir(tj.grad(loss))(w, h))
    assert "optimization_barrier" in text and "call" in text
    plain = lambda w, h: np.sum(block.__wrapped__(w, block.__wrapped__(w, h)))  # noqa: E731
    np.testing.assert_allclose(tj.grad(loss)(w, h), tj.grad(plain)(w, h), rtol=1e-12)


def test_checkpoint_composes_with_jvp_and_second_derivatives():
    f = lambda x: np.sum(block(np.eye(3), x) ** 2)  # noqa: E731
    g = lambda x: np.sum(block.__wrapped__(np.eye(3), x) ** 2)  # noqa: E731
    v = np.array([[1.0, 2.0, 3.0]])
    x = np.array([[0.1, -0.2, 0.3]])
    np.testing.assert_allclose(tj.jvp(tj.grad(f), (x,), (v,))[1],
                               tj.jvp(tj.grad(g), (x,), (v,))[1], rtol=1e-12)
    np.testing.assert_allclose(tj.grad(lambda x: np.sum(tj.grad(f)(x)))(x),
                               tj.grad(lambda x: np.sum(tj.grad(g)(x)))(x), rtol=1e-12)


# -- custom_vjp ---------------------------------------------------------------------------------
@tj.custom_vjp
def softplus(x):
    return np.log1p(np.exp(x))


def _softplus_fwd(x):
    return softplus(x), x


def _softplus_bwd(x, g):
    return (g / (1 + np.exp(-x)),)    # stable: no exp overflow turned into inf / inf


softplus.defvjp(_softplus_fwd, _softplus_bwd)


def test_custom_vjp_gives_a_stable_gradient_where_autodiff_overflows():
    x = np.array([-800.0, 0.0, 800.0])
    g = tj.grad(lambda x: np.sum(softplus(x)))(x)
    np.testing.assert_allclose(g, [0.0, 0.5, 1.0])
    naive = tj.grad(lambda x: np.sum(np.log1p(np.exp(x))))(x)
    assert np.isnan(naive[2])


def test_custom_vjp_rule_is_the_one_used():
    @tj.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (f(x), None), lambda res, g: (g * 10.0,))
    np.testing.assert_allclose(tj.grad(lambda x: np.sum(f(x)))(x3), [10.0] * 3)
    np.testing.assert_allclose(tj.jit(tj.grad(lambda x: np.sum(f(x))))(x3), [10.0] * 3)
    # Outside any transform the function itself runs; forward mode differentiates its body.
    np.testing.assert_allclose(f(x3), 2 * x3)
    np.testing.assert_allclose(tj.jvp(f, (x3,), (np.ones(3),))[1], [2.0] * 3)


@tj.custom_vjp
def logsumexp(x):
    m = np.max(x)
    return np.log(np.sum(np.exp(x - m))) + m


def _lse_fwd(x):
    out = logsumexp(x)
    return out, (x, out)


def _lse_bwd(res, g):
    x, out = res
    return (g * np.exp(x - out),)


logsumexp.defvjp(_lse_fwd, _lse_bwd)


def test_custom_vjp_logsumexp_matches_softmax_and_composes_with_jit():
    x = np.array([1000.0, 1001.0, 999.0])
    g = ijit(tj.grad(logsumexp))(x)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(g, e / e.sum())
    out, pull = tj.vjp(logsumexp, x)
    np.testing.assert_allclose(pull(np.float64(2.0))[0], 2 * e / e.sum())


def test_jacobians_of_a_pytree_argument_are_that_pytree_of_jacobians():
    """As JAX's: {"a": J_a, "b": J_b} for a dict argument (jacrev returned an object array
    of dicts, jacfwd raised AttributeError)."""
    from collections import namedtuple
    x = np.arange(3.0)
    want = {"a": np.diag(x + 1), "b": np.diag(x)}
    P = namedtuple("P", "a b")
    for jac in (tracejit.jacrev, tracejit.jacfwd):
        got = jac(lambda d: d["a"] * d["b"])({"a": x, "b": x + 1})
        assert set(got) == {"a", "b"}
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-12)
        got = tracejit.jit(jac(lambda p: p.a * p.b))(P(x, x + 1))
        assert isinstance(got, P)
        np.testing.assert_allclose(got.a, want["a"], rtol=1e-12)
        # a tuple output (refused before): a tuple of Jacobians, as JAX's
        pair = jac(lambda v: (v, 2 * v))(x)
        assert isinstance(pair, tuple) and len(pair) == 2
        np.testing.assert_array_equal(pair[1], 2 * np.eye(3))


def test_hessian_is_jacfwd_of_jacrev_and_matches_finite_differences_of_the_gradient():
    def f(x):
        return np.tanh(x @ np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.1]])).sum() + (x ** 3).sum()
    x = np.array([0.3, -0.2, 0.7])
    h = tj.hessian(f)(x)
    g = tj.grad(f)
    eps = 1e-6
    fd = np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, h.T, rtol=1e-12)
