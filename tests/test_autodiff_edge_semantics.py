"""Derivatives at the points users hit: zeros in products, ties, infinities, Python scalars, and
the arguments the autodiff API is given (cotangents, custom_vjp rules). Each test pins down one
convention or one exactness: against float64 central differences where the function is smooth
there, against the rule JAX and PyTorch follow where it is not."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj
import tracejit.nn.functional as F
from gradcheck import check_hvp, ijit
from tracejit.scipy.special import logsumexp


# -- exact at every order with zeros (a mask of the zeros is exact to first order only) -----------
@pytest.mark.parametrize("x", [np.array([0.0, 2.0, 3.0]), np.array([0.0, 0.0, 3.0]),
                               np.array([1.5, -2.0, 0.0, 0.0])])
def test_prod_second_derivative_is_exact_with_zeros(x):
    check_hvp(lambda x: np.prod(x), x)


def test_prod_over_some_axes_second_derivative_is_exact_with_zeros():
    x = np.random.default_rng(0).standard_normal((2, 3, 2))
    x[0, 1, 1] = x[1, 0, 0] = x[1, 2, 0] = 0.0
    check_hvp(lambda x: np.sum(np.prod(x, axis=(0, 2)) * np.array([1.0, -2.0, 3.0])), x)


@pytest.mark.parametrize("x", [np.array([1.0, 0.0, 2.0, 3.0]),
                               np.array([0.0, 1.5, 0.0, 2.0, -1.0])])
def test_cumprod_second_derivative_is_exact_after_a_zero(x):
    # sum(w * cumprod(x)): the terms after the zero are 0 but their derivatives are not
    check_hvp(lambda x: np.sum(np.cumprod(x) * np.arange(1.0, x.size + 1)), x)


def test_cumprod_along_an_axis_second_derivative_is_exact_with_zeros():
    x = np.array([[0.5, 0.0, 2.0], [0.0, -0.7, 1.5], [0.9, 1.1, 0.0]])
    check_hvp(lambda x: np.sum(np.cumprod(x, axis=0) * np.sin(x)), x)


def test_prod_third_derivative_with_a_zero():
    # d^3 (x0 x1 x2) / dx0 dx1 dx2 = 1, whatever x
    x = np.array([0.0, 2.0, 3.0])
    t = tj.jacfwd(tj.jacfwd(tj.grad(lambda x: np.prod(x))))(x)
    assert t[0, 1, 2] == 1.0 and t[2, 1, 0] == 1.0 and t[0, 0, 1] == 0.0


def test_prod_and_cumprod_gradients_of_empty_axes():
    assert ijit(tj.grad(lambda x: np.prod(x, axis=1).sum()))(np.zeros((2, 0))).shape == (2, 0)
    assert ijit(tj.grad(lambda x: np.cumprod(x).sum()))(np.zeros(0)).shape == (0,)


# -- tracejit.nn at ties: the rule of PyTorch and jax.nn ---------------------------------------
def test_nn_relu_has_zero_gradient_at_zero():
    g = ijit(tj.grad(lambda x: F.relu(x).sum()))(np.array([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])
    out = ijit(F.relu)(np.array([np.nan, -np.inf, 0.0, 2.0], np.float32))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [np.nan, 0.0, 0.0, 2.0])


def test_max_pool2d_gives_a_tied_window_gradient_to_its_first_maximum():
    # torch.max_pool2d and JAX's reduce_window route it whole to one element, not 1/2, 1/4, ...
    g = ijit(tj.grad(lambda x: F.max_pool2d(x, 2).sum()))(np.ones((1, 1, 2, 2)))
    np.testing.assert_array_equal(g, [[[[1.0, 0.0], [0.0, 0.0]]]])
    x = np.array([[[[1.0, np.nan], [3.0, 2.0]]]])
    assert np.isnan(ijit(lambda x: F.max_pool2d(x, 2))(x)).all()


# -- Python scalars as arguments ----------------------------------------------------------------
def test_jacfwd_and_jacrev_accept_a_python_float():
    f = lambda x: np.stack([x, x * x])  # noqa: E731
    np.testing.assert_array_equal(tj.jacfwd(f)(3.0), [1.0, 6.0])
    np.testing.assert_array_equal(tj.jacrev(f)(3.0), [1.0, 6.0])


# -- logaddexp with infinities (log-space code masks entries with -inf) --------------------------
def test_logaddexp_gradient_is_finite_with_infinite_inputs():
    x = np.array([-np.inf, -np.inf, np.inf, np.inf, 1.0])
    y = np.array([-np.inf, 1.0, 1.0, np.inf, -np.inf])
    gx, gy = ijit(tj.grad(lambda x, y: np.logaddexp(x, y).sum(), argnums=(0, 1)))(x, y)
    np.testing.assert_array_equal(gx, [0.5, 0.0, 1.0, 0.5, 1.0])
    np.testing.assert_array_equal(gy, [0.5, 1.0, 0.0, 0.5, 0.0])
    _, t = ijit(lambda x, y: tj.jvp(np.logaddexp, (x, y), (np.ones(5), np.zeros(5))))(x, y)
    np.testing.assert_array_equal(t, gx)


def test_logaddexp_second_derivative_at_a_tie_and_far_apart():
    a, b = np.array([0.3, -2.0, 5.0, 40.0]), np.array([0.3, 1.0, -3.0, -40.0])
    check_hvp(lambda a, b: np.logaddexp(a, b).sum(), a, b)
    check_hvp(lambda b, a: np.logaddexp(a, b).sum(), b, a)


# -- the API's arguments ------------------------------------------------------------------------
def test_jacfwd_and_jacrev_take_a_tuple_of_argnums():
    f = lambda a, b: a * b  # noqa: E731
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    for jac in (tj.jacfwd, tj.jacrev):
        ja, jb = jac(f, argnums=(0, 1))(a, b)
        np.testing.assert_array_equal(ja, np.diag(b))
        np.testing.assert_array_equal(jb, np.diag(a))


@pytest.mark.parametrize("x", [np.arange(3), 3, np.ones(2, bool)])
def test_jacobians_of_integer_or_bool_inputs_are_refused_as_grad_refuses_them(x):
    # jacfwd gave a Jacobian of zeros, jacrev an IndexError
    for jac in (tj.jacfwd, tj.jacrev):
        with pytest.raises(TypeError, match=f"{jac.__name__} needs float inputs"):
            jac(lambda x: x * 2.0)(x)


def test_vjp_converts_a_cotangent_of_another_dtype(monkeypatch):
    # the compiled backward pass takes only its own dtypes (it raised an empty ArgumentMismatch)
    monkeypatch.setattr(tj.config, "tiered", False)
    x = np.array([0.25, 2.0])
    for ct in (np.ones(2, np.float32), np.ones(2, np.int64)):
        (g,) = tj.vjp(lambda a: a * 2, x)[1](ct)
        assert g.dtype == np.float64
        np.testing.assert_array_equal(g, [2.0, 2.0])
    (g,) = tj.vjp(lambda a: a * 2, x.astype(np.float32))[1](np.ones(2))
    assert g.dtype == np.float32


def test_vjp_refuses_a_cotangent_of_another_shape():
    _, pull = tj.vjp(lambda a: a * 2, np.array([0.25, 2.0]))
    for ct in (np.ones(3), 1.0):   # JAX refuses both; a scalar was silently broadcast
        with pytest.raises(ValueError, match="cotangent 0 has shape"):
            pull(ct)


# -- custom_vjp: what bwd returns becomes the argument's cotangent --------------------------------
def _scaled(bwd):
    @tj.custom_vjp
    def f(x, y):
        return x * y
    f.defvjp(lambda x, y: (x * y, (x, y)), bwd)
    return f


def test_custom_vjp_cotangent_takes_the_arguments_dtype_and_may_be_a_python_number():
    f = _scaled(lambda r, g: (g.astype(np.float64) * r[1], 1.0))
    x32 = np.array([1.0, 2.0], np.float32)
    gx, gy = ijit(tj.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1)))(x32, np.float32(3.0))
    assert gx.dtype == np.float32 and gy.dtype == np.float32
    np.testing.assert_array_equal(gx, [3.0, 3.0])
    assert gy == 1.0


@pytest.mark.parametrize("bwd", [lambda r, g: (g.sum(), None), lambda r, g: (g[:1], None),
                                 lambda r, g: (2.0, None)])
def test_custom_vjp_cotangent_of_another_shape_is_an_error(bwd):
    # it became the gradient as it was: shape () or (1,) for an argument of shape (2,)
    f = _scaled(bwd)
    with pytest.raises(ValueError, match=r"bwd returned a cotangent of shape .* shape \(2,\)"):
        ijit(tj.grad(lambda x: f(x, np.ones(2)).sum()))(np.ones(2))


def test_custom_vjp_closing_over_a_traced_value_is_a_clear_error():
    def loss(w, x):
        @tj.custom_vjp
        def f(x):
            return np.sin(x) * w
        f.defvjp(lambda x: (f.fun(x), x), lambda r, g: (g * np.cos(r) * w,))
        return f(x).sum()
    w, x = np.array([3.0, 4.0]), np.array([1.0, 2.0])
    for argnums in (0, 1):   # an escaped-tracer error named no custom_vjp
        with pytest.raises(tj.UnsupportedError, match="custom_vjp .*closes over"):
            ijit(tj.grad(loss, argnums=argnums))(w, x)


# -- logsumexp at ties (all-equal logits are where training starts) -------------------------------
def test_logsumexp_gradient_at_tied_maxima_weighs_them_by_b():
    a, b = np.array([1.0, 3.0, 3.0, -np.inf]), np.array([1.0, -1.0, 2.0, 1.0])
    ga, gb = ijit(tj.grad(lambda a, b: logsumexp(a, b=b), argnums=(0, 1)))(a, b)
    total = np.sum(b * np.exp(a))
    np.testing.assert_allclose(ga, b * np.exp(a) / total, rtol=1e-12)   # it split 0.44/0.44
    np.testing.assert_allclose(gb, np.exp(a) / total, rtol=1e-12)


def test_logsumexp_second_derivative_at_ties():
    check_hvp(lambda a: logsumexp(a, axis=1).sum(), np.array([[0.0, 0.0, 0.0], [1.0, 3.0, 3.0]]))
    check_hvp(lambda a, b: logsumexp(a, b=b), np.array([1.0, 3.0, 3.0, 0.5]),
              np.array([1.0, 2.0, 0.5, 1.0]))


def test_logsumexp_with_an_infinite_maximum_keeps_its_gradients_finite_elsewhere():
    g = ijit(tj.grad(lambda a: logsumexp(a)))(np.array([np.inf, 1.0, 0.0]))
    np.testing.assert_array_equal(g[1:], [0.0, 0.0])
