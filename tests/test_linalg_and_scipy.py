"""np.linalg's solve, inv, cholesky, slogdet and det; scipy.special's gammaln, digamma and
logsumexp; scipy.stats' norm.logpdf and multivariate_normal.logpdf (through tracejit.scipy)
(issue 13): gradients against finite differences in float64, forward mode, NumPy's and SciPy's
errors and edge cases, and the compiled digamma's accuracy.

Values on the compiled backend are pinned by tests/test_numpy_differential.py; gradients run on
the interpreter (gradcheck), edge cases on the NumPy tier: neither compiles a kernel.
"""
import functools

import numpy as np
import pytest
import scipy.special
import scipy.stats
from scipy.special import logsumexp as _bound_logsumexp  # bound before any trace

import tracejit
from tracejit.scipy.special import logsumexp
from tracejit.scipy.stats import multivariate_normal, norm

from gradcheck import EPS, assert_close, check_grad, check_hvp, check_jvp, check_vjp, ijit

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
BATCH = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
B = RNG.standard_normal((3, 2))
V = RNG.standard_normal(3)
S = RNG.standard_normal((3, 3))
njit = functools.partial(tracejit.jit, tiered=False)
numpy_tier = functools.partial(tracejit.jit, backend="numpy")


def spd(s):
    """A symmetric positive definite matrix made from any square ``s``."""
    return s @ np.swapaxes(s, -1, -2) + 2 * np.eye(s.shape[-1])


# -- gradients and tangents of np.linalg ------------------------------------------------------

@pytest.mark.parametrize("f,args", [
    (lambda a, b: np.linalg.solve(a, b), (A, B)),
    (lambda a, v: np.linalg.solve(a, v), (A, V)),
    (lambda a, b: np.linalg.solve(a, b), (BATCH, B)),          # b broadcast over the batch
    (lambda a: np.linalg.inv(a), (BATCH,)),
    (lambda a: np.linalg.det(a), (A,)),
    (lambda a: np.linalg.det(a), (-A,)),                       # a negative determinant
    (lambda a: np.linalg.slogdet(a)[1], (BATCH,)),
    (lambda s: np.linalg.cholesky(spd(s)), (S,)),
    (lambda s: np.linalg.cholesky(spd(s), upper=True), (S,)),
], ids=["solve", "solve-vector", "solve-batched", "inv", "det", "det-negative", "slogdet",
        "cholesky", "cholesky-upper"])
def test_linalg_gradients_and_tangents_match_finite_differences(f, args):
    check_grad(f, *args)
    check_jvp(f, *args)


def test_cholesky_gradient_is_the_symmetric_one_finite_differences_give_along_symmetric_moves():
    """NumPy reads only the lower triangle, so only symmetric perturbations have one answer:
    <grad, d> must equal the directional difference for every symmetric d (grad symmetric)."""
    a, w = spd(S), RNG.standard_normal((3, 3))

    def f(a):
        return (np.linalg.cholesky(a) * w).sum()
    g = np.asarray(ijit(tracejit.grad(f))(a))
    np.testing.assert_allclose(g, g.T, rtol=1e-12)
    for seed in range(3):
        d = np.random.default_rng(seed).standard_normal((3, 3))
        d = d + d.T
        fd = (f(a + EPS * d) - f(a - EPS * d)) / (2 * EPS)
        assert_close((g * d).sum(), fd, rtol=1e-6)


def test_logdet_has_second_derivatives():
    check_hvp(lambda a: np.linalg.slogdet(a)[1], A)


def test_compiled_gradient_through_solve_and_slogdet_matches_the_formulas():
    def f(a, b):
        return np.linalg.solve(a, b).sum() + np.linalg.slogdet(a)[1]
    x = np.linalg.solve(A, V)
    want = -np.outer(np.linalg.solve(A.T, np.ones(3)), x) + np.linalg.inv(A).T
    np.testing.assert_allclose(njit(tracejit.grad(f))(A, V), want, rtol=1e-12)


# -- NumPy's rules and errors -----------------------------------------------------------------

def test_linalg_dtypes_follow_numpy():
    a32 = A.astype(np.float32)
    f = numpy_tier(lambda a, ai: (np.linalg.inv(a), np.linalg.solve(a, np.ones(3, np.int8)),
                                  np.linalg.det(ai), np.linalg.slogdet(a).sign))
    inv, x, d, sign = f(a32, np.eye(3, dtype=np.int32))
    assert (inv.dtype, x.dtype, d.dtype, sign.dtype) == (np.float32, np.float64, np.float64,
                                                         np.float32)
    result = numpy_tier(lambda a: np.linalg.slogdet(a))(a32)
    assert type(result) is type(np.linalg.slogdet(a32)) and result.logabsdet.dtype == np.float32


@pytest.mark.parametrize("f,exc,match", [
    (lambda v: np.linalg.inv(v), np.linalg.LinAlgError, "1-dimensional array given"),
    (lambda v: np.linalg.det(np.outer(v, v)[:2]), np.linalg.LinAlgError, "must be square"),
    (lambda v: np.linalg.solve(np.outer(v, v), v[:2]), ValueError, "mismatch in its core"),
    (lambda v: np.linalg.solve(np.outer(v, v), v[0]), ValueError, "not have enough dim"),
    (lambda v: np.linalg.solve(np.ones((2, 3, 3)) * v, np.ones((4, 3, 1))), ValueError,
     "broadcast"),
])
def test_linalg_shape_errors_are_numpys_at_the_users_line(f, exc, match):
    with pytest.raises(exc, match=match) as info:
        numpy_tier(f)(V)
    assert "test_linalg_and_scipy.py" in str(info.value)


@pytest.mark.parametrize("jit", [njit, numpy_tier], ids=["compiled", "numpy-tier"])
def test_singular_and_indefinite_matrices_raise_numpys_linalg_error_when_run(jit):
    singular = np.ones((3, 3))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        jit(lambda a: np.linalg.inv(a))(singular)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        jit(lambda a: np.linalg.cholesky(a))(-spd(S))
    sign, logdet = jit(lambda a: np.linalg.slogdet(a))(singular)   # no error: (0, -inf)
    assert sign == 0 and logdet == -np.inf
    assert jit(lambda a: np.linalg.det(a))(singular) == 0


# -- scipy.special: gammaln, digamma, logsumexp -----------------------------------------------

# mpmath's digamma at 40 digits: around the positive root, near poles and far out, where
# SciPy's own float64 result is off by up to 1e-12 (-10.99996)
DIGAMMA_EXACT = [
    (1.4616321449683622, -9.241265521729427e-17), (1.4616321449683625, 1.2245374622004068e-16),
    (1.46, -0.0015805619870834522), (1.5, 0.03648997397857652),
    (1.3, -0.16919088886679962), (-10.99996, -24997.5572100376),
    (-2.0001, 10000.922494819815), (1e-08, -100000000.57721564),
    (0.25, -4.2274535333762655), (7.5, 1.9467574842460869), (123.456, 4.811829323828985),
    (10000000000.0, 23.025850929890456)]


def test_compiled_digamma_and_gammaln_match_scipy_and_exact_values():
    xs = np.concatenate([np.linspace(0.01, 30, 2001), RNG.uniform(-20, 0, 2000),
                         10.0 ** np.linspace(-300, 300, 61)])
    special = np.array([0.0, -0.0, -1.0, -7.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324,
                        1e-310, 1e308, -1e20])
    exact_x = np.array([x for x, _ in DIGAMMA_EXACT])
    f = njit(lambda x: (scipy.special.digamma(x), scipy.special.gammaln(x),
                        scipy.special.psi(x.astype(np.float32)),
                        scipy.special.gammaln(x.astype(np.float32))))
    digamma, gammaln, digamma32, gammaln32 = f(np.concatenate([xs, special, exact_x]))
    n = len(xs)
    ref = scipy.special.digamma(xs)
    away = (xs > 0) | ((np.abs(xs - np.rint(xs)) > 1e-3) & (np.abs(ref) > 1e-3))
    np.testing.assert_allclose(digamma[:n][away], ref[away], rtol=1e-13)
    np.testing.assert_allclose(digamma[n + len(special):], [e for _, e in DIGAMMA_EXACT],
                               rtol=3e-16 * 16, atol=0)
    np.testing.assert_array_equal(digamma[n:n + len(special)], scipy.special.digamma(special))
    np.testing.assert_allclose(gammaln[:n], scipy.special.gammaln(xs), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(gammaln[n:n + len(special)], scipy.special.gammaln(special))
    with np.errstate(over="ignore"):
        every = np.concatenate([xs, special, exact_x]).astype(np.float32)     # 1e308: inf
    assert digamma32.dtype == gammaln32.dtype == np.float32
    np.testing.assert_allclose(digamma32, scipy.special.digamma(every), rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(gammaln32, scipy.special.gammaln(every), rtol=1e-6, atol=1e-30)


def test_gammaln_gradient_is_digamma_and_its_second_derivative_trigamma():
    x = np.linspace(-2.7, 6.3, 7)
    check_grad(lambda x: scipy.special.gammaln(x), x)
    check_jvp(lambda x: scipy.special.gammaln(x), x)
    np.testing.assert_allclose(ijit(tracejit.grad(lambda x: scipy.special.gammaln(x).sum()))(x),
                               scipy.special.digamma(x), rtol=1e-14)
    np.testing.assert_allclose(ijit(tracejit.grad(lambda x: tracejit.grad(
        lambda y: scipy.special.gammaln(y).sum())(x).sum()))(x),
        scipy.special.polygamma(1, x), rtol=1e-12)


def test_integers_and_bools_give_float64_and_float32_stays_in_scipys_ufuncs():
    f = numpy_tier(lambda i, b, x: (scipy.special.gammaln(i), scipy.special.digamma(b),
                                    scipy.special.gammaln(x)))
    out = f(np.arange(1, 4, dtype=np.int16), np.array([True]), np.ones(2, np.float32))
    assert [o.dtype for o in out] == [np.float64, np.float64, np.float32]


@pytest.mark.parametrize("a,kw", [
    (RNG.standard_normal((3, 4)), {}), (RNG.standard_normal((3, 4)), {"axis": -1}),
    (RNG.standard_normal((2, 3, 4)), {"axis": (0, 2), "keepdims": True}),
    (RNG.standard_normal((3, 4)).astype(np.float32), {"axis": 0}),
    (RNG.standard_normal((3, 4)), {"b": RNG.standard_normal((3, 4)), "axis": 1}),
    (RNG.standard_normal((3, 4)), {"b": RNG.standard_normal(4), "return_sign": True}),
    (RNG.standard_normal((3, 4)).astype(np.float32), {"b": 2.0, "axis": 1}),
    (np.arange(6).reshape(2, 3), {"axis": 1}),
    (np.array(3.5), {}), (np.zeros((2, 0)), {"axis": 1}), (np.zeros((2, 0)), {"axis": 0}),
    (np.array([[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0], [1000.0, 1000.0]]),
     {"axis": 1}),
    (np.array([[1.0, 2.0], [1.0, 2.0]]), {"b": np.array([[1.0, -1.0], [-1.0, -1.0]]),
                                          "axis": 1}),
    (np.array([[1.0, 2.0], [1.0, 2.0]]), {"b": np.array([[1.0, -1.0], [-1.0, -1.0]]),
                                          "axis": 1, "return_sign": True}),
], ids=["all", "axis", "axes-keepdims", "float32", "b", "b-sign", "weak-b", "ints", "0-d",
        "empty-row", "empty-column", "inf-nan", "negative-sum", "negative-sum-sign"])
def test_logsumexp_matches_scipy(a, kw):
    kw = dict(kw)
    b = kw.pop("b", None)
    traced_b = b if isinstance(b, np.ndarray) else None      # a Python float stays weak

    def f(a, tb):
        return logsumexp(a, **kw, b=b if tb is None else tb)
    with np.errstate(all="ignore"):
        want = scipy.special.logsumexp(a, **kw, b=b)
    got = numpy_tier(f)(a, traced_b)
    for g, w in zip(got, want) if kw.get("return_sign") else [(got, want)]:
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6 if w.dtype == np.float32 else 1e-14)


def test_logsumexp_gradient_is_the_weighted_softmax_and_finite_for_large_inputs():
    a, b = RNG.standard_normal((3, 4)), RNG.uniform(0.5, 2.0, (3, 4))
    check_grad(lambda a, b: logsumexp(a, axis=1, b=b), a, b)
    check_jvp(lambda a, b: logsumexp(a, axis=1, b=b), a, b)
    big = 1000 + a          # exp overflows: SciPy's fallback must not poison the gradient
    g = ijit(tracejit.grad(lambda a: logsumexp(a, axis=1).sum()))(big)
    np.testing.assert_allclose(g, scipy.special.softmax(big, axis=1), rtol=1e-12)
    ties = np.zeros((2, 3))  # tied maxima share the gradient
    np.testing.assert_allclose(ijit(tracejit.grad(lambda a: logsumexp(a)))(ties), 1 / 6)


# -- scipy.stats through tracejit.scipy -------------------------------------------------------

def test_norm_logpdf_matches_scipy_and_has_gradients():
    x = np.array([-np.inf, -1.0, 0.0, 2.5, np.inf, np.nan])
    loc, scale = np.array([0.5]), np.array([[2.0], [0.0], [-1.0]])
    got = numpy_tier(lambda x, l, s: norm.logpdf(x, l, s))(x, loc, scale)
    with np.errstate(divide="ignore"):
        want = scipy.stats.norm.logpdf(x, loc, scale)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-14)
    xs, locs, scales = RNG.standard_normal(4), RNG.standard_normal(4), RNG.uniform(0.5, 2, 4)
    check_grad(lambda x, l, s: norm.logpdf(x, l, s), xs, locs, scales)
    check_jvp(lambda x, l, s: norm.logpdf(x, l, s), xs, locs, scales)


@pytest.mark.parametrize("x,mean,cov", [
    (RNG.standard_normal((5, 3)), RNG.standard_normal(3), spd(S)),
    (RNG.standard_normal(3), None, spd(S)),
    (RNG.standard_normal((2, 4, 3)), np.zeros(3), np.array([1.0, 2.0, 3.0])),
    (RNG.standard_normal(4), np.array(0.5), 2.0),           # dim 1: x holds 4 points
    (RNG.standard_normal((1, 3)), np.ones(3), 1.5),
], ids=["points", "one-point", "batched-diagonal-cov", "dim-1", "squeezed"])
def test_multivariate_normal_logpdf_matches_scipy(x, mean, cov):
    got = numpy_tier(lambda x: multivariate_normal.logpdf(x, mean, cov))(x)
    want = scipy.stats.multivariate_normal.logpdf(x, mean, cov)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_multivariate_normal_logpdf_gradients_for_x_mean_and_covariance():
    x, mean = RNG.standard_normal((4, 3)), RNG.standard_normal(3)

    def f(x, mean, s):
        return multivariate_normal.logpdf(x, mean, spd(s))
    check_grad(f, x, mean, S)
    check_jvp(f, x, mean, S)
    check_vjp(f, x, mean, S, backend="numpy")      # split into forward and backward programs


def test_multivariate_normal_refuses_allow_singular_and_bad_parameters():
    with pytest.raises(TypeError, match="allow_singular"):
        numpy_tier(lambda x: multivariate_normal.logpdf(x, cov=np.eye(3),
                                                        allow_singular=True))(np.ones(3))
    with pytest.raises(ValueError, match="must be a vector of length"):
        numpy_tier(lambda x: multivariate_normal.logpdf(x, np.ones((2, 2)), 1.0))(np.ones(4))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        numpy_tier(lambda x: multivariate_normal.logpdf(x, cov=-np.eye(3)))(np.ones(3))


# -- SciPy's own functions given traced values, and tracejit.scipy on arrays ------------------

def test_scipy_special_logsumexp_called_by_its_name_traces():
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 700.0]])
    got = ijit(lambda x: scipy.special.logsumexp(x, axis=1, keepdims=True))(x)
    np.testing.assert_allclose(got, scipy.special.logsumexp(x, axis=1, keepdims=True))
    assert scipy.special.logsumexp.__module__.startswith("scipy")     # restored after


@pytest.mark.parametrize("call,replacement", [
    (lambda x: _bound_logsumexp(x), "tracejit.scipy.special.logsumexp"),
    (lambda x: scipy.stats.norm.logpdf(x), "tracejit.scipy.stats.norm.logpdf"),
    (lambda x: scipy.stats.norm(1.0, 2.0).logpdf(x), "tracejit.scipy.stats.norm.logpdf"),
    (lambda x: scipy.stats.multivariate_normal.logpdf(x, np.zeros(3)),
     "tracejit.scipy.stats.multivariate_normal.logpdf"),
], ids=["bound-logsumexp", "norm", "frozen-norm", "multivariate-normal"])
def test_scipys_own_function_on_a_traced_value_names_the_replacement_and_the_line(call,
                                                                                    replacement):
    with pytest.raises(TypeError, match=replacement.replace(".", r"\.")) as info:
        ijit(call)(np.ones(3))
    assert "test_linalg_and_scipy.py" in str(info.value)


def test_other_scipy_functions_and_methods_are_refused_by_name():
    with pytest.raises(TypeError, match=r"scipy\.special\.softmax on a traced value"):
        ijit(lambda x: scipy.special.softmax(x))(np.ones(3))
    with pytest.raises(AttributeError, match=r"tracejit\.scipy\.stats\.norm\.cdf does not"):
        ijit(lambda x: norm.cdf(x))(np.ones(3))


def test_tracejit_scipy_on_arrays_is_scipys_own():
    x = RNG.standard_normal((3, 4))
    assert logsumexp(x, axis=1).tolist() == scipy.special.logsumexp(x, axis=1).tolist()
    assert norm.logpdf(x, 1.0).tolist() == scipy.stats.norm.logpdf(x, 1.0).tolist()
    assert (multivariate_normal.logpdf(x[:, :3], cov=spd(S)).tolist()
            == scipy.stats.multivariate_normal.logpdf(x[:, :3], cov=spd(S)).tolist())
    assert tracejit.scipy.special.gammaln is scipy.special.gammaln
