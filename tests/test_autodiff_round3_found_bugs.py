"""Wrong derivatives, crashes and refusals found by the third autodiff review hunt, one test
per behaviour. They run on the interpreter: they pin down derivatives, not compilation."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
import tracejit as tj
from gradcheck import assert_close, ijit, numeric_grad
from tracejit import lax


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setattr(tracejit.config, "backend", "interpreter")


def test_grad_of_a_scan_whose_body_prints_its_carry_matches_finite_differences(capsys):
    # The residuals that depend on the scan's consts alone are computed once, before the
    # loop, by the body's ops they need; dce kept the body's debug_print of the carry among
    # them too, and it read a carry that has no value there: a KeyError under grad.
    xs = np.array([2.0, 3.0])

    def loss(w):
        def body(c, x):
            tj.debug_print("c={}", c)
            return c * x * w, None
        c, _ = lax.scan(body, w, xs)
        return (c ** 2).sum()

    w = np.array([0.5, -1.0])
    g = ijit(tj.grad(loss))(w)
    assert capsys.readouterr().out.count("c=") == 2     # printed by the forward scan only
    assert_close(g, numeric_grad(ijit(loss), [w], 0), rtol=1e-5)


def _loss_and_aux(a, b):
    return (a[:, None] * b ** 3).sum() ** 2, {"b2": a * b[:2]}


def test_jacrev_jacfwd_hessian_and_jvp_take_has_aux_as_in_jax():
    # jacrev, jacfwd and hessian had no has_aux (a TypeError), nor had jvp, where JAX's
    # return (jacobian, aux) and (output, tangent, aux).
    a, b = np.array([0.5, -1.0]), np.array([2.0, 3.0, 1.0])
    value, aux = _loss_and_aux(a, b)
    s = (a[:, None] * b ** 3).sum()             # value = s ** 2, ds/da_i = sum(b ** 3)
    grad_a = 2 * s * np.full(2, (b ** 3).sum())
    hess_a = np.full((2, 2), 2 * (b ** 3).sum() ** 2)
    for jac in (tj.jacrev, tj.jacfwd):
        got, got_aux = ijit(jac(_loss_and_aux, has_aux=True))(a, b)
        assert_close(got, grad_a)
        assert_close(got_aux["b2"], aux["b2"])
        (ga, gb), _ = jac(_loss_and_aux, argnums=(0, 1), has_aux=True)(a, b)
        assert ga.shape == (2,) and gb.shape == (3,)
    h, h_aux = ijit(tj.hessian(_loss_and_aux, has_aux=True))(a, b)
    assert_close(h, hess_a)
    assert_close(h_aux["b2"], aux["b2"])
    out, tangent, jvp_aux = tj.jvp(lambda q: _loss_and_aux(q, b), (a,), (np.ones(2),),
                                   has_aux=True)
    assert_close(out, value)
    assert_close(tangent, grad_a.sum())
    assert_close(jvp_aux["b2"], aux["b2"])
    assert len(tj.jvp(lambda q: q * 2, (a,), (a,))) == 2     # without has_aux as before


def _apply_loss(w, act, n):
    out = w
    for _ in range(n):
        out = act(out)
    return out.sum()


def _relu(v):
    return np.maximum(v, 0.0)


def test_grad_passes_a_function_argument_through_as_jax_does():
    # grad(loss)(params, model_fn): a function among the arguments not differentiated was
    # refused ("argument act has type function, which is not an array") on arrays and inside
    # jit alike; JAX's grad passes it to the function as it is.
    w = np.array([0.5, -1.0, 2.0])
    assert_close(tj.grad(_apply_loss)(w, np.sin, 1), np.cos(w))
    assert_close(tj.grad(_apply_loss)(w, _relu, 2), (w > 0).astype(float))
    value, g = tj.value_and_grad(_apply_loss)(w, np.sin, 1)
    assert_close(value, np.sin(w).sum())
    assert_close(ijit(lambda v: tj.grad(_apply_loss)(v, np.tanh, 1))(w), 1 - np.tanh(w) ** 2)
    assert_close(tj.hessian(_apply_loss)(w, np.sin, 1), np.diag(-np.sin(w)))
    settings = tj.grad(lambda v, cfg, n: _apply_loss(v, cfg["act"], n) * cfg["scale"])
    assert_close(settings(w, {"act": np.sin, "scale": 2.0}, 1), 2 * np.cos(w))
    assert_close(settings(w, {"act": np.cos, "scale": 3.0}, 1), -3 * np.sin(w))
    assert_close(settings(w, {"act": np.sin, "scale": 1.0}, 2), np.cos(np.sin(w)) * np.cos(w))
    # a Python function held so is read afresh at each call: what it reads may change
    scale = np.array([1.0, 2.0, 3.0])

    def scaled_sin(v):
        return np.sin(v) * scale

    g = tj.grad(_apply_loss)
    assert_close(g(w, scaled_sin, 1), np.cos(w) * scale)
    scale[0] = 10.0
    assert_close(g(w, scaled_sin, 1), np.cos(w) * np.array([10.0, 2.0, 3.0]))


def test_hessian_of_x_to_the_y_at_y_zero_is_symmetric_and_matches_finite_differences():
    # d/dx x**y was a constant 0 wherever y == 0 (to spare 0 ** 0 a NaN), so its derivative in
    # y, d2/dx dy = 1 / x there, was 0 while d2/dy dx (through d/dy) was 1 / x.
    def f(v):
        return v[0] ** v[1]

    v = np.array([2.0, 0.0])
    h = ijit(tj.hessian(f))(v)
    g = ijit(tj.grad(f))
    expected = np.stack([(g(v + d) - g(v - d)) / 2e-6 for d in np.eye(2) * 1e-6], axis=1)
    assert_close(h, expected, rtol=1e-5, atol=1e-6)
    assert_close(h[0, 1], 0.5)
    assert_close(ijit(tj.grad(lambda a: (a ** 2.0).sum()))(np.zeros(2)), np.zeros(2))
    assert_close(ijit(tj.grad(lambda a: (a ** a).sum()))(np.zeros(1)), np.zeros(1))  # no NaN


def test_second_derivative_of_sinc_at_zero_is_minus_pi_squared_over_three():
    # np.sinc replaces 0 by the constant 1e-20 (NumPy's formula), so every derivative at 0
    # was 0; the second is -pi^2 / 3.
    d2 = ijit(tj.grad(tj.grad(np.sinc)))
    assert_close(d2(0.0), -np.pi ** 2 / 3)
    x = np.array([0.0, 0.3, -1.0])
    assert_close(ijit(np.sinc)(x), np.sinc(x), rtol=1e-15)
    assert_close(ijit(tj.grad(lambda a: np.sinc(a).sum()))(x),
                 numeric_grad(ijit(lambda a: np.sinc(a).sum()), [x], 0))
    assert ijit(tj.hessian(lambda a: np.sinc(a).sum()))(x.astype(np.float32)).dtype == np.float32


def test_np_interp_gradient_at_a_sample_point_is_the_segments_slope():
    # At a sample point np.interp gave fp[j] itself, a constant in x: the gradient was 0 for
    # every x on the grid of xp (JAX's is the slope of the segment that starts there).
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, -0.0])
    x = np.array([1.0, 0.0, 3.0, 0.5, -1.0, 4.0])
    g = ijit(tj.grad(lambda a: np.interp(a, xp, fp).sum()))(x)
    assert_close(g, [-1.0, 2.0, -1.0, 2.0, 0.0, 0.0])
    value = ijit(lambda a: np.interp(a, xp, fp))(x)
    np.testing.assert_array_equal(value, np.interp(x, xp, fp))
    np.testing.assert_array_equal(np.signbit(value), np.signbit(np.interp(x, xp, fp)))


def test_logaddexp2_derivatives_at_a_tie_are_shared_as_logaddexps():
    # np.logaddexp2 gives a + 1 where a == b (NumPy's formula): its gradient there was (1, 0)
    # and its Hessian 0, where d/da = d/db = 1/2 and d2/da2 = ln2 / 4.
    def f(v):
        return np.logaddexp2(v[0], v[1])

    v = np.array([-1.0, -1.0])
    assert_close(ijit(tj.grad(f))(v), [0.5, 0.5])
    assert_close(ijit(tj.hessian(f))(v), np.log(2) / 4 * np.array([[1.0, -1.0], [-1.0, 1.0]]))
    assert ijit(f)(v) == 0.0 and ijit(f)(np.array([np.inf, np.inf])) == np.inf
    assert_close(ijit(tj.grad(f))(np.array([np.inf, 1.0])), [1.0, 0.0])    # no NaN


def test_grad_of_a_cond_whose_branch_prints_prints_once(capsys):
    # The backward cond recomputes the taken branch, its debug_print included: under grad
    # the branch printed twice (JAX's prints once).
    def loss(w):
        def taken(a):
            tj.debug_print("a={}", a)
            return (a ** 2).sum()
        return lax.cond(w[0] > 0, taken, lambda a: a.sum(), w)

    w = np.array([0.5, -1.0])
    assert_close(ijit(tj.grad(loss))(w), 2 * w)
    assert capsys.readouterr().out.count("a=") == 1


def test_hessian_of_a_loss_with_gammaln_matches_finite_differences():
    # digamma had no derivative (trigamma was refused), so the Hessian of any loss with
    # gammaln (a Poisson or negative-binomial likelihood), which JAX gives, was an error.
    import scipy.special

    def nll(a):
        return (scipy.special.gammaln(a) - a * np.log(a) + a).sum()

    a = np.array([0.3, 1.0, 2.5, 7.0])
    h = ijit(tj.hessian(nll))(a)
    g = ijit(tj.grad(nll))
    expected = np.stack([(g(a + d) - g(a - d)) / 2e-6 for d in np.eye(4) * 1e-6], axis=1)
    assert_close(h, expected, rtol=1e-5, atol=1e-6)
    def d1(v):
        return tj.grad(lambda u: scipy.special.gammaln(u).sum())(v)     # digamma

    def d2(v):
        return tj.grad(lambda u: d1(u).sum())(v)                        # trigamma

    x = np.array([-2.5, -0.3, 0.25, 1.0, 40.0])
    assert_close(ijit(d2)(x), scipy.special.polygamma(1, x), rtol=1e-12)
    third = ijit(tj.grad(lambda u: d2(u).sum()))(x)
    assert_close(third, scipy.special.polygamma(2, x), rtol=1e-9)


def test_custom_jvp_rule_is_used_by_jvp_grad_and_hessian_in_a_scan():
    # tracejit had no custom_jvp (JAX's): the stable log1pexp of JAX's docs could not be
    # written. Forward mode runs the rule, reverse mode its transpose.
    @tj.custom_jvp
    def _log1pexp(v):
        return np.log1p(np.exp(v))

    @_log1pexp.defjvp
    def _(primals, tangents):
        (v,), (t,) = primals, tangents
        return _log1pexp(v), t * (1 - 1 / (1 + np.exp(v)))    # finite where exp overflows

    big = np.array([100.0, 1000.0])
    assert_close(ijit(tj.grad(lambda v: _log1pexp(v).sum()))(big), [1.0, 1.0])
    assert_close(ijit(lambda v: tj.jvp(_log1pexp, (v,), (np.ones(2),))[1])(big), [1.0, 1.0])
    xs = np.array([0.5, -1.0])

    def loss(w):
        c, ys = lax.scan(lambda c, x: (_log1pexp(c * x), _log1pexp(c).sum()), w, xs)
        return (c ** 2).sum() + ys.sum()

    w = np.array([0.3, -0.7, 1.2])
    assert_close(ijit(tj.grad(loss))(w), numeric_grad(ijit(loss), [w], 0), rtol=1e-6)
    g = ijit(tj.grad(loss))
    expected = np.stack([(g(w + d) - g(w - d)) / 2e-6 for d in np.eye(3) * 1e-6], axis=1)
    assert_close(ijit(tj.hessian(loss))(w), expected, rtol=1e-5, atol=1e-6)
    assert_close(_log1pexp(np.array([1.0])), np.log1p(np.e))        # eager: the function
