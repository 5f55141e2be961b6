"""Wrong gradients found by the second autodiff review hunt, one test per behaviour."""
from __future__ import annotations

import numpy as np

import tracejit as tj

# -- arrays and names a differentiated function reads from outside ------------------------------
W_HELD = np.array([1.0, 2.0])


def _layer(x):
    return x * W_HELD


def _loss(x):                       # reads W_HELD only through the helper
    return np.sum(_layer(x) ** 2)


def test_grad_sees_a_global_rebound_that_only_a_helper_reads():
    # The guards counted grad's own wrappers as levels of depth, so a helper of the
    # differentiated function (the model it calls) was past their reach: stale gradients
    # after ``W = W - lr * g``.
    global W_HELD
    x = np.array([1.0, 1.0])
    W_HELD = np.array([1.0, 2.0])
    for transform in (tj.grad, tj.value_and_grad):
        g = transform(_loss)
        g(x)
        W_HELD = W_HELD * 3.0
        after = g(x)
        grad = after[1] if isinstance(after, tuple) else after
        np.testing.assert_array_equal(grad, 2 * W_HELD ** 2)
        W_HELD = np.array([1.0, 2.0])


def test_a_closure_variable_of_a_helper_rebound_is_seen_by_grad():
    def make():
        w = np.array([1.0, 2.0])

        def f(x):
            return x * w

        def set_w(v):
            nonlocal w
            w = v
        return f, set_w

    f, set_w = make()
    g = tj.grad(lambda x: np.sum(f(x)))
    x = np.ones(2)
    np.testing.assert_array_equal(g(x), [1.0, 2.0])
    set_w(np.array([6.0, 7.0]))
    np.testing.assert_array_equal(g(x), [6.0, 7.0])


def test_jit_of_grad_sees_a_global_array_changed_in_place():
    # jit's own wrapper held grad's (a wrapper object, not a function) in its closure: the
    # arrays the differentiated function reads were baked in as unchecked constants.
    global W_HELD
    W_HELD = np.array([1.0, 2.0])
    x = np.array([1.0, 1.0])
    for wrap in (lambda: tj.jit(tj.grad(_loss)), lambda: tj.jit(tj.value_and_grad(_loss)),
                 lambda: tj.grad(tj.jit(_loss)), lambda: tj.jit(tj.jit(_loss))):
        W_HELD[:] = [1.0, 2.0]
        f = wrap()
        f(x)
        W_HELD -= 0.5                       # the training loop's in-place update
        out = f(x)
        expected_grad, expected_loss = 2 * W_HELD ** 2, np.sum(W_HELD ** 2)
        if isinstance(out, tuple):
            np.testing.assert_array_equal(out[1], expected_grad)
        elif np.ndim(out) == 0:
            assert out == expected_loss
        else:
            np.testing.assert_array_equal(out, expected_grad)
    W_HELD = np.array([1.0, 2.0])


# -- custom_vjp ------------------------------------------------------------------------------------
def test_custom_vjp_fwd_output_of_another_dtype_or_shape_is_a_clear_error():
    # it crashed deep in the IR builder ("mul operands must have one type") with no name
    import pytest
    for wrong in (lambda x: np.sin(x).astype(np.float32), lambda x: np.sin(x)[:1]):
        @tj.custom_vjp
        def f(x):
            return np.sin(x)
        f.defvjp(lambda x, wrong=wrong: (wrong(x), x), lambda r, g: (g * np.cos(r),))
        with pytest.raises(TypeError, match=r"custom_vjp f: fwd returned output 0 of type"):
            tj.grad(lambda x: np.sum(f(x) * x))(np.array([0.5, 1.0]))


# -- Jacobians of pytrees ----------------------------------------------------------------------------
def _f2(a, b):
    return np.sum(a * a * b) + a[0] * b[1] ** 3 + np.sum(np.sin(a)) * b[0]


def test_hessian_of_a_dict_argument_is_a_dict_of_dicts_as_in_jax():
    # jacrev gives a dict, which jacfwd refused ("jacfwd of a function returning dict")
    a, b = np.array([0.5, -1.0]), np.array([2.0, 3.0, 0.5])
    h = tj.hessian(lambda p: _f2(p["a"], p["b"][:2]) + p["b"][2] ** 2)({"a": a, "b": b})
    full = tj.hessian(lambda v: _f2(v[:2], v[2:4]) + v[4] ** 2)(np.concatenate([a, b]))
    np.testing.assert_allclose(h["a"]["a"], full[:2, :2], rtol=1e-12)
    np.testing.assert_allclose(h["a"]["b"], full[:2, 2:], rtol=1e-12)
    np.testing.assert_allclose(h["b"]["a"], full[2:, :2], rtol=1e-12)
    np.testing.assert_allclose(h["b"]["b"], full[2:, 2:], rtol=1e-12)


def test_hessian_with_a_tuple_of_argnums_is_nested_as_in_jax():
    a, b = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    h = tj.hessian(_f2, argnums=(0, 1))(a, b)
    full = tj.hessian(lambda v: _f2(v[:2], v[2:]))(np.concatenate([a, b]))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(h[i][j], full[2 * i:2 * i + 2, 2 * j:2 * j + 2],
                                       rtol=1e-12)

