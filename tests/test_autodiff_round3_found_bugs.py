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
