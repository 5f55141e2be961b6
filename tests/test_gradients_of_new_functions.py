"""Derivatives of the NumPy functions added without gradient checks (reductions with where=/
initial=, accumulate, cumulative_*, piecewise, *space with traced endpoints, block, resize,
delete/insert/choose, partition, multi_dot, matrix_power, put*, diff(prepend/append),
logaddexp2, sinc, arccosh, interp, correlate, cov, cross, kron, cbrt, ...): grad and jvp
against float64 central differences on the interpreter at generic points (distinct values),
one compiled batch; cbrt's derivative at 0 and +-inf as JAX's; integer inputs and integer
outputs refused by grad as in JAX."""
import warnings

import numpy as np
import pytest

import tracejit as tj
from gradcheck import check_grad, check_jvp, ijit

pytestmark = pytest.mark.filterwarnings("ignore::tracejit.RetraceWarning")

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
P = RNG.uniform(1.2, 3.0, (3, 4))
V = RNG.standard_normal(7)
W = RNG.standard_normal(4)
M = np.array([[True, False, True, True], [False, True, True, True], [True, True, False, True]])
N = A.copy()
N[0, 1] = N[2, 3] = np.nan


def _put(x, v):
    y = x.copy()
    np.put(y, [1, 5, 10], v)
    return y


def _put_along(x, v):
    y = x.copy()
    np.put_along_axis(y, np.array([[0, 2], [1, 3], [3, 0]]), v, axis=1)
    return y


def _putmask(x, v):
    y = x.copy()
    np.putmask(y, M, v)
    return y


UNARY = [
    (lambda x: np.sum(x, axis=1, where=M, initial=2.0), A),
    (lambda x: np.prod(x, axis=0, where=M, keepdims=True), P),
    (lambda x: np.mean(x, axis=1, where=M), A),
    (lambda x: np.var(x, where=M), A),
    (lambda x: np.std(x, axis=0, where=M, ddof=1), A),
    (lambda x: np.max(x, axis=1, initial=-5.0, where=M), A),
    (lambda x: np.min(x, axis=0, initial=0.1), A),
    (lambda x: np.nanvar(x, axis=1), N),
    (lambda x: np.nanmax(x, axis=0), N),
    (lambda x: np.nanquantile(x, 0.3, axis=1), N),
    (lambda x: np.quantile(x, [0.1, 0.5, 0.9], axis=1), A),
    (lambda x: np.maximum.accumulate(x, axis=1), A),
    (lambda x: np.minimum.accumulate(x), A),
    (lambda x: np.cumulative_sum(x, axis=0, include_initial=True), A),
    (lambda x: np.cumulative_prod(x, axis=1, include_initial=True), A),
    (lambda x: np.piecewise(x, [x < -0.5, x > 0.5], [lambda t: t ** 2, lambda t: 3 * t, np.sin]),
     A),
    (lambda x: np.block([[x, x[:, :2]], [x[:2], x[:2, :2]]]), A),
    (lambda x: np.stack(np.unstack(x, axis=1)[::-1]), A),
    (lambda x: np.apply_along_axis(lambda r: np.sum(r ** 2) * r[0], 1, x), A),
    (lambda x: np.apply_over_axes(np.sum, x * x, [0, 1]), A),
    (lambda x: np.resize(x, (5, 3)), A),
    (lambda x: np.compress([True, False, True, True], x, axis=1), A),
    (lambda x: np.delete(x, [0, 2], axis=1), A),
    (lambda x: np.insert(x, [1, 3], x[:2] * 2), V),
    (lambda x: np.partition(x, 2, axis=1)[:, 2], A),
    (lambda x: np.take_along_axis(x, np.argpartition(x, 1, axis=1)[:, :2], axis=1), A),
    (lambda x: x[np.lexsort((x, np.array([1, 0, 1, 0, 2, 2, 1])))], V),
    (lambda x: np.linalg.matrix_power(x[:3, :3] + 3 * np.eye(3), -2), A),
    (lambda x: np.diff(x, n=2, axis=1, prepend=0.5, append=x[:, :1]), A),
    (lambda x: np.sinc(x), A),
    (lambda x: np.arccosh(x), P),
    (lambda x: np.cbrt(x), A),
    (lambda x: np.rollaxis(x.reshape(3, 2, 2), 2, 0), A),
    (lambda x: np.cov(x), A),
    (lambda x: np.corrcoef(x), A),
    (lambda x: np.vander(x, 4), W),
    (lambda x: np.ediff1d(x, to_begin=x[0, :2]), A),
    (lambda x: np.frexp(x)[0] * np.ldexp(x, 2), A),
    (lambda x: np.heaviside(x, 0.5) * x, A),
]

BINARY = [
    (lambda a, b: np.linspace(a, b, 5, axis=1), np.array([0.2, 0.4]), np.array([1.3, 2.0])),
    (lambda a, b: np.logspace(a, b, 4, base=2.0, endpoint=False), np.array(0.3), np.array(1.1)),
    (lambda a, b: np.geomspace(a, b, 4), np.array([0.3, 1.5]), np.array([4.1, 2.2])),
    (lambda a, b: np.choose(np.array([[0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]]), [a, b]), A, B),
    (lambda a, b: np.linalg.multi_dot([a, b.T, a]), A, B),
    (_put, A, np.array([0.5, -1.0, 2.0])),
    (_put_along, A, RNG.standard_normal((3, 2))),
    (_putmask, A, RNG.standard_normal(5)),
    (np.logaddexp2, A, B),
    (lambda x, fp: np.interp(x, np.array([0.0, 0.7, 1.5, 2.2, 3.0]), fp),
     np.array([0.3, 1.1, 1.9, 2.8, -0.5, 3.5]), RNG.standard_normal(5)),
    (lambda a, b: np.correlate(a, b, mode="same"), V, W),
    (lambda a, b: np.convolve(a, b), W, V),
    (lambda a, b: np.cross(a, b, axisa=0, axisb=0), A[:, :3], B[:, :3]),
    (lambda a, b: np.kron(a, b), A[:2, :3], B[:2, :2]),
    (np.polyval, W, A),
    (np.trapezoid, V, np.cumsum(RNG.uniform(0.1, 1.0, 7))),
]


def test_new_functions_grad_and_jvp_match_central_differences():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for f, *args in UNARY + BINARY:
            args = [np.ascontiguousarray(a) for a in args]
            check_grad(f, *args, atol=1e-6)
            check_jvp(f, *args, atol=1e-6)


def test_new_functions_compiled_grads_match_the_interpreter():
    def loss(x, y):
        return (np.sum(np.var(x, axis=1, where=M)) + np.sum(np.maximum.accumulate(x, axis=0))
                + np.sum(np.cumulative_prod(x, axis=1, include_initial=True) * y)
                + np.sum(np.linalg.matrix_power(x[:3, :3] + 3 * np.eye(3), -2))
                + np.sum(np.partition(x, 2, axis=1)[:, 2]) + np.nanquantile(x, 0.3)
                + np.sum(np.cbrt(x) * np.logaddexp2(x, y[:, 1:])) + np.sum(np.cov(x)))
    y = B[:, :1].repeat(5, axis=1)
    compiled = tj.jit(tj.grad(loss, argnums=(0, 1)), tiered=False)(A, y)
    interpreted = ijit(tj.grad(loss, argnums=(0, 1)))(A, y)
    for c, i in zip(compiled, interpreted):
        np.testing.assert_allclose(c, i, rtol=1e-10, atol=1e-12)


def test_cbrt_derivative_is_inf_at_zero_and_zero_at_infinity_as_jax():
    x = np.array([0.0, -0.0, 1.0, -8.0, np.inf, -np.inf])
    want = [np.inf, np.inf, 1 / 3, 1 / 12, 0.0, 0.0]
    for jit in (ijit, lambda f: tj.jit(f, tiered=False)):
        value = jit(np.cbrt)(x)
        np.testing.assert_array_equal(value, np.cbrt(x))
        assert np.array_equal(np.signbit(value), np.signbit(np.cbrt(x)))
        np.testing.assert_allclose(jit(tj.grad(lambda x: np.sum(np.cbrt(x))))(x), want)
        _, t = jit(lambda x: tj.jvp(np.cbrt, (x,), (np.ones_like(x),)))(x)
        np.testing.assert_allclose(t, want)


def test_integer_inputs_and_integer_outputs_are_refused_by_grad_as_jax():
    ints = np.array([3, 1, 2])
    for f in (lambda x: np.sum(np.cumulative_sum(x) * 1.0), lambda x: np.median(x)):
        with pytest.raises(TypeError, match="float inputs"):
            ijit(tj.grad(f))(ints)
    x = np.array([0.3, 1.0, -2.0, 1.5])
    for f in (lambda x: np.argpartition(x, 2)[2], lambda x: np.lexsort((x,))[0],
              lambda x: np.sum(np.frexp(x)[1]), lambda x: np.array_equal(x, x)):
        with pytest.raises(TypeError, match="float output"):
            ijit(tj.grad(f))(x)
    # the integer part of a product carries no derivative
    g = ijit(tj.grad(lambda x: np.sum(x * np.argpartition(x, 2))))(x)
    np.testing.assert_array_equal(g, np.argpartition(x, 2).astype(float))
