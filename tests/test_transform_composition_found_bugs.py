"""Compositions of transforms found wrong or crashing in a bug hunt (helper: transform
compositions): each test pins the behaviour that was broken."""
from __future__ import annotations

import numpy as np

import tracejit as tj

X = np.linspace(-1.0, 1.0, 4)


def layers(a, n, act=np.tanh):
    for _ in range(n):
        a = act(a) * 1.1
    return a


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def test_checkpoint_takes_a_python_int_used_in_range_under_grad():
    # the int was traced, so range(n) raised a ConcretizationError telling to mark it static
    # in a jit (no jit here; and a static jit argument was traced again by checkpoint)
    want = numeric_grad(lambda a: layers(a, 2).sum(), X)
    got = tj.grad(lambda a: tj.checkpoint(layers)(a, 2).sum())(X)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    static = tj.jit(tj.grad(lambda a, n: tj.checkpoint(layers)(a, n).sum()), static_argnums=1)
    np.testing.assert_allclose(static(X, 2), want, rtol=1e-6)


def test_checkpoint_takes_a_function_argument():
    # "argument args2 has type ufunc, which is not an array ... static_argnums", which
    # checkpoint has not
    got = tj.jit(tj.grad(lambda a: tj.checkpoint(layers)(a, 1, np.sin).sum()))(X)
    np.testing.assert_allclose(got, 1.1 * np.cos(X), rtol=1e-6)


def test_custom_vjp_takes_a_python_int_used_in_range():
    @tj.custom_vjp
    def repeat_double(a, n):
        for _ in range(n):
            a = a * 2
        return a

    repeat_double.defvjp(lambda a, n: (repeat_double(a, n), n),
                         lambda n, g: (g * 2.0 ** n, None))
    got = tj.jit(tj.grad(lambda a: repeat_double(a, 3).sum()))(X)
    np.testing.assert_allclose(got, np.full(4, 8.0))


X32 = X.astype(np.float32)
A32 = (np.eye(4) * 0.9).astype(np.float32)


def matmul_layers(a, n):
    for _ in range(n):
        a = np.tanh(A32 @ a)
    return a


def test_autocast_takes_a_python_int_used_in_range_eagerly_and_under_jit():
    from tracejit.amp import autocast
    want = matmul_layers(X32, 2)
    # the int was a parameter of autocast's trace: a ConcretizationError, also with the int
    # static in the enclosing jit (autocast traced it again)
    np.testing.assert_allclose(autocast(matmul_layers)(X32, 2), want, rtol=1e-2, atol=1e-3)
    static = tj.jit(lambda a, n: autocast(matmul_layers)(a, n), static_argnums=1)
    np.testing.assert_allclose(static(X32, 2), want, rtol=1e-2, atol=1e-3)
    g = tj.grad(lambda a: autocast(matmul_layers)(a, 2).sum())(X32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, tj.grad(lambda a: matmul_layers(a, 2).sum())(X32),
                               rtol=2e-2, atol=2e-3)


def test_a_disabled_autocast_inside_an_autocast_takes_a_python_int():
    from tracejit.amp import autocast
    f = autocast(lambda a: autocast(matmul_layers, enabled=False)(a, 2))
    np.testing.assert_allclose(tj.jit(f)(X32), matmul_layers(X32, 2), rtol=1e-6)


def test_excess_precision_takes_a_python_int_used_in_range():
    from tracejit.amp import excess_precision

    def chain(a, n):
        for _ in range(n):
            a = np.tanh(a * np.float16(1.5))
        return a

    x16 = X32.astype(np.float16)
    want = chain(X32, 2).astype(np.float16)
    np.testing.assert_allclose(excess_precision(chain)(x16, 2), want, rtol=2e-3)
    np.testing.assert_allclose(tj.jit(lambda a: excess_precision(chain)(a, 2))(x16), want,
                               rtol=2e-3)

