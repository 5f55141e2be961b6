"""Bugs found by probing argument handling (pytrees, Python scalars, static arguments) and the
composition of transforms, each checked against JAX's semantics or NumPy."""
import dataclasses

import numpy as np
import pytest

import tracejit as tj

X = np.array([0.3, 0.7, 1.1])


def _sines(x, n):
    """A function that needs the value of ``n`` in Python (range), not a tracer."""
    for _ in range(n):
        x = np.sin(x)
    return x.sum()


def _sines_grad(x, n):
    g, y = np.ones_like(x), x
    for _ in range(n):
        g, y = g * np.cos(y), np.sin(y)
    return g


# -- gradients with respect to arguments that hold no arrays -----------------------------------
def test_grad_with_respect_to_an_argument_holding_no_arrays_gives_it_back():
    """Was ValueError "0 is not in list": the gradient of an empty dict (or None) argument was
    looked up by the index of its first leaf, which it does not have. JAX gives {} (None)."""
    f = lambda p, y: (y * 2.0).sum()
    assert tj.grad(f)({}, X) == {}
    assert tj.grad(f)(None, X) is None
    g_p, g_y = tj.grad(f, argnums=(0, 1))({}, X)
    assert g_p == {}
    np.testing.assert_allclose(g_y, np.full(3, 2.0))
    value, (g_p, g_y) = tj.value_and_grad(f, argnums=(0, 1))([], X)
    assert g_p == [] and value == pytest.approx(X.sum() * 2)
    g_y, g_p = tj.jit(tj.grad(lambda y, p: (y * 2.0).sum(), argnums=(0, 1)))(X, ())
    assert g_p == ()
    np.testing.assert_allclose(g_y, np.full(3, 2.0))


# -- Jacobians and keyword arguments -----------------------------------------------------------
def test_jacobians_pass_keyword_arguments_through_undifferentiated():
    """Was "jac() got an unexpected keyword argument": JAX's jacfwd, jacrev and hessian pass
    keyword arguments to the function, not differentiating with respect to them."""
    f = lambda a, b: a * a * b
    b = X + 1.0
    np.testing.assert_allclose(tj.jacrev(f)(X, b=b), np.diag(2 * X * b))
    np.testing.assert_allclose(tj.jacfwd(f)(X, b=b), np.diag(2 * X * b))
    np.testing.assert_allclose(tj.hessian(lambda a, b: (a * a * a * b).sum())(X, b=b),
                               np.diag(6 * X * b))
    ja, jb = tj.jacrev(lambda a, b, c: a * b * c, argnums=(0, 1))(X, b, c=2.0)
    np.testing.assert_allclose(ja, np.diag(2 * b))
    np.testing.assert_allclose(jb, np.diag(2 * X))


# -- arguments that are not differentiated stay concrete, as in JAX ----------------------------
def test_grad_keeps_a_python_int_argument_concrete_for_python_loops():
    """grad(f)(x, 3) with f looping ``for _ in range(n)`` raised a ConcretizationError (the
    jit that caches grad traced n), where JAX's grad keeps arguments it does not
    differentiate concrete. Each value of n gives its own gradient."""
    g = tj.grad(_sines)
    for n in (3, 2, 3, 0):
        np.testing.assert_allclose(g(X, n), _sines_grad(X, n))
    np.testing.assert_allclose(g(X, np.int64(1)), _sines_grad(X, 1))
    np.testing.assert_allclose(tj.grad(_sines)(X, n=2), _sines_grad(X, 2))
    value, grad = tj.value_and_grad(_sines)(X, 2)
    assert value == pytest.approx(np.sin(np.sin(X)).sum())
    np.testing.assert_allclose(grad, _sines_grad(X, 2))


def test_grad_keeps_bool_and_float_settings_concrete_for_python_branches():
    f = lambda x, flag: (x * 2.0).sum() if flag else (x * 3.0).sum()
    np.testing.assert_allclose(tj.grad(f)(X, True), np.full(3, 2.0))
    np.testing.assert_allclose(tj.grad(f)(X, False), np.full(3, 3.0))
    h = lambda x, k: (x * 2.0).sum() if k > 2.5 else x.sum()
    np.testing.assert_allclose(tj.grad(h)(X, 3.0), np.full(3, 2.0))
    np.testing.assert_allclose(tj.grad(h)(X, 2.0), np.ones(3))
    c = lambda x, cfg: (x * cfg[0]).sum() if cfg[1] else x.sum()
    np.testing.assert_allclose(tj.grad(c)(X, (4, True)), np.full(3, 4.0))


def test_grad_inside_jit_keeps_a_literal_int_concrete():
    """jit(lambda x: grad(f)(x, 3)): the 3 is no argument of the jit, yet grad's own trace
    made it a parameter, and range(n) failed."""
    np.testing.assert_allclose(tj.jit(lambda x: tj.grad(_sines)(x, 3))(X), _sines_grad(X, 3))


def test_jit_of_grad_with_a_static_int_argument():
    """jit(grad(f), static_argnums=1)(x, 3): the jit passed 3 as a value, and grad's trace made
    it a parameter again."""
    g = tj.jit(tj.grad(_sines), static_argnums=1)
    np.testing.assert_allclose(g(X, 3), _sines_grad(X, 3))
    np.testing.assert_allclose(g(X, 1), _sines_grad(X, 1))


def test_grad_of_jit_with_a_static_argument():
    """grad(jit(f, static_argnums=1))(x, 3) said the static argument was a traced value."""
    g = tj.grad(tj.jit(_sines, static_argnums=1))
    np.testing.assert_allclose(g(X, 3), _sines_grad(X, 3))
    np.testing.assert_allclose(g(X, 2), _sines_grad(X, 2))


def test_vjp_and_jvp_keep_integer_primals_concrete():
    """As grad: JAX's vjp and jvp leave an integer primal concrete (range(n) works)."""
    for n in (3, 2):
        out, pull = tj.vjp(_sines, X, n)
        assert out == pytest.approx(_sines(X, n))
        ct_x, ct_n = pull(1.0)
        np.testing.assert_allclose(ct_x, _sines_grad(X, n))
        assert ct_n is None
        np.testing.assert_allclose(
            tj.jit(lambda x: tj.vjp(_sines, x, n)[1](1.0)[0])(X), _sines_grad(X, n))
        y, dy = tj.jvp(_sines, (X, n), (np.ones(3), 0))
        assert y == pytest.approx(_sines(X, n))
        assert dy == pytest.approx(_sines_grad(X, n).sum())
        y, dy = tj.jit(lambda x: tj.jvp(_sines, (x, n), (np.ones(3), 0)))(X)
        assert dy == pytest.approx(_sines_grad(X, n).sum())


# -- jit's arguments ---------------------------------------------------------------------------
def test_negative_static_argnums_count_from_the_end_as_in_jax():
    """Was "static_argnums must be non-negative"; JAX counts them from the end of the
    positional parameters."""
    f = tj.jit(lambda x, n: x * n if n > 1 else x, static_argnums=-1)
    np.testing.assert_allclose(f(X, 3), 3 * X)
    np.testing.assert_allclose(f(X, n=1), X)
    with pytest.raises(ValueError, match="negative"):
        tj.jit(lambda *args: args[0], static_argnums=-1)


def test_unhashable_pytree_aux_error_names_the_call():
    @dataclasses.dataclass
    class Tagged:
        a: np.ndarray
        tags: list

    tj.register_pytree_node(Tagged, lambda t: ((t.a,), t.tags), lambda aux, ch: Tagged(ch[0], aux))
    f = tj.jit(lambda t: t.a * 2)
    with pytest.raises(TypeError, match=r"(?s)Tagged.*unhashable.*in the call at .*"
                                        r"test_pytree_transform_found_bugs\.py.*What to do"):
        f(Tagged(X, [1]))


# -- has_aux -----------------------------------------------------------------------------------
def test_has_aux_takes_a_list_pair_as_jax_does():
    """Was "the function must return a pair (output, aux), got list"."""
    g, aux = tj.grad(lambda x: [(x * x).sum(), x.mean()], has_aux=True)(X)
    np.testing.assert_allclose(g, 2 * X)
    assert aux == pytest.approx(X.mean())


# -- custom_vjp and keyword arguments ----------------------------------------------------------
def _scaled():
    @tj.custom_vjp
    def scaled(x, scale=2.0):
        return x * scale

    # bwd returns one cotangent per argument, the defaulted one too, as in JAX
    scaled.defvjp(lambda x, scale=2.0: (x * scale, scale),
                  lambda s, g: (g * s * 100.0, None))
    return scaled


def test_custom_vjp_fills_in_defaults_and_takes_keyword_arguments_as_jax():
    """A default argument was left out of the arguments bwd answers for ("bwd returned 2
    cotangents for 1 arguments"), and a keyword argument was refused ("unexpected keyword
    argument"); JAX's custom_vjp binds both to positions."""
    scaled = _scaled()
    np.testing.assert_allclose(tj.grad(lambda x: scaled(x).sum())(X), np.full(3, 200.0))
    np.testing.assert_allclose(tj.grad(lambda x: scaled(x, scale=3.0).sum())(X),
                               np.full(3, 300.0))
    np.testing.assert_allclose(tj.jit(tj.grad(lambda x: scaled(x, scale=3.0).sum()))(X),
                               np.full(3, 300.0))
    np.testing.assert_allclose(scaled(X, scale=3.0), 3 * X)
    np.testing.assert_allclose(tj.jit(lambda x: scaled(x, scale=3.0))(X), 3 * X)


def test_custom_vjp_refuses_keyword_only_arguments_naming_the_call():
    @tj.custom_vjp
    def kwonly(x, *, scale):
        return x * scale

    kwonly.defvjp(lambda x, *, scale: (x * scale, None), lambda r, g: (g,))
    with pytest.raises(TypeError, match=r"(?s)keyword-only.*in the call at.*What to do"):
        tj.grad(lambda x: kwonly(x, scale=2.0).sum())(X)


def test_grad_makes_only_the_int_settings_static_when_they_suffice():
    """A float argument that changes every call (a time, a temperature) stays dynamic when only
    the int one was needed in Python: one trace, not one per value."""
    def f(x, n, t):
        for _ in range(n):
            x = np.sin(x) * t
        return x.sum()

    g = tj.grad(f)
    for i in range(4):
        t = 0.1 * (i + 1)
        y, grad = X, np.ones(3)
        for _ in range(2):
            grad, y = grad * np.cos(y) * t, np.sin(y) * t
        np.testing.assert_allclose(g(X, 2, t), grad)
    assert sum(j.trace_count for j in g._static_jits.values()) == 1
