"""np.linalg's decompositions under jit (eigh, eigvalsh, svd, svdvals, qr) and what NumPy
builds on svd (the matrix 2, -2 and nuclear norms, matrix_rank, pinv, cond): NumPy's values
(the same LAPACK routines, so equal to rounding, the eigenvectors' signs included), dtypes,
namedtuples and errors on every backend, and their derivatives (JAX's rules) against central
differences, for functions that do not depend on the vectors' signs.

One compiled function returns every result, so that the file compiles few kernels (a kernel
serves every size of its rank and dtype); gradients run on the interpreter (gradcheck)."""
import functools

import numpy as np
import pytest

import tracejit as tj
from tracejit.tracer.errors import UnsupportedError

from gradcheck import check_grad, check_jvp, ijit

RNG = np.random.default_rng(7)
SYM = RNG.standard_normal((2, 3, 3))
SYM = SYM + np.swapaxes(SYM, -1, -2)
TALL = RNG.standard_normal((2, 4, 3))
WIDE = RNG.standard_normal((3, 5))
LOW_RANK = RNG.standard_normal((4, 2)) @ RNG.standard_normal((2, 3))     # rank 2
BACKENDS = {"interpreter": functools.partial(tj.jit, backend="interpreter"),
            "numpy": functools.partial(tj.jit, backend="numpy"),
            "compiled": functools.partial(tj.jit, tiered=False)}


def everything(s, x, low):
    """Every function of this file on a symmetric ``s``, any ``x`` and a rank-deficient
    ``low`` (its smallest singular value is rounding noise: cut by NumPy's tolerances)."""
    w, v = np.linalg.eigh(s)
    return (w, v, np.linalg.eigvalsh(s, UPLO="U"), *np.linalg.svd(x),
            *np.linalg.svd(x, full_matrices=False), np.linalg.svd(x, compute_uv=False),
            *np.linalg.qr(x), *np.linalg.qr(x, mode="complete"), np.linalg.qr(x, mode="r"),
            np.linalg.norm(x, 2, axis=(-2, -1)), np.linalg.norm(x, -2, axis=(-1, -2)),
            np.linalg.norm(x, "nuc", axis=(-2, -1), keepdims=True), np.linalg.cond(x),
            np.linalg.matrix_rank(low), np.linalg.pinv(low), np.linalg.pinv(x))


JITTED = {name: jit(everything) for name, jit in BACKENDS.items()}


def assert_matches(got, want, rtol=1e-12, atol=1e-13):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), (i, g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"result {i}")


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("x", [TALL, WIDE], ids=["tall", "wide"])
def test_decompositions_equal_numpys_on_every_backend(backend, x):
    assert_matches(JITTED[backend](SYM, x, LOW_RANK), everything(SYM, x, LOW_RANK))


def test_factors_reconstruct_their_matrices_and_are_orthonormal():
    w, v, _, u, s, vh, ur, sr, vhr, _, q, r, qc, rc, *_ = JITTED["compiled"](SYM, TALL, LOW_RANK)
    eye = np.broadcast_to(np.eye(3), (2, 3, 3))
    np.testing.assert_allclose((v * w[:, None, :]) @ np.swapaxes(v, -1, -2), SYM, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, eye, atol=1e-12)
    np.testing.assert_allclose((u[..., :3] * s[:, None, :]) @ vh, TALL, atol=1e-12)
    np.testing.assert_allclose((ur * sr[:, None, :]) @ vhr, TALL, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(4), u.shape),
                               atol=1e-12)
    np.testing.assert_allclose(q @ r, TALL, atol=1e-12)
    np.testing.assert_allclose(qc @ rc, TALL, atol=1e-12)
    assert np.all(np.diff(w, axis=-1) > 0) and np.all(np.diff(s, axis=-1) <= 0)
    assert np.array_equal(np.triu(r), r) and np.array_equal(np.triu(rc), rc)


def test_results_are_numpys_namedtuples():
    f = BACKENDS["numpy"](lambda s, x: (np.linalg.eigh(s), np.linalg.svd(x), np.linalg.qr(x)))
    eig, svd, qr = f(SYM, TALL)
    for got, want in zip((eig, svd, qr), (np.linalg.eigh(SYM), np.linalg.svd(TALL),
                                          np.linalg.qr(TALL))):
        assert type(got) is type(want) and got._fields == want._fields
    np.testing.assert_allclose(eig.eigenvalues, np.linalg.eigvalsh(SYM), rtol=1e-12)
    assert svd.Vh.shape == (2, 3, 3) and qr.R.shape == (2, 3, 3)


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_float32_is_computed_in_float64_and_rounded_and_integers_become_float64(backend):
    # as NumPy: float32 in, float32 out, from float64 LAPACK; integers as float64
    f = BACKENDS[backend](lambda s, x, i: (*np.linalg.eigh(s), *np.linalg.svd(x),
                                           *np.linalg.qr(x, mode="complete"),
                                           *np.linalg.svd(i, full_matrices=False)))
    s32, x32, ints = SYM.astype(np.float32), TALL.astype(np.float32), np.arange(6).reshape(3, 2)
    want = (*np.linalg.eigh(s32), *np.linalg.svd(x32), *np.linalg.qr(x32, mode="complete"),
            *np.linalg.svd(ints, full_matrices=False))
    assert_matches(f(s32, x32, ints), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_empty_matrices_give_numpys_empty_and_identity_factors(backend):
    f = BACKENDS[backend](lambda x: (*np.linalg.svd(x), np.linalg.svd(x, compute_uv=False),
                                     *np.linalg.qr(x, mode="complete"), *np.linalg.qr(x)))
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        x = np.zeros(shape)
        want = (*np.linalg.svd(x), np.linalg.svd(x, compute_uv=False),
                *np.linalg.qr(x, mode="complete"), *np.linalg.qr(x))
        assert_matches(f(x), want)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_svd_of_a_nan_raises_numpys_linalg_error(backend):
    x = TALL.copy()
    x[1, 2, 0] = np.nan
    with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
        np.linalg.svd(x)
    f = BACKENDS[backend](lambda x: np.linalg.svd(x, compute_uv=False))
    with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
        f(x)


@pytest.mark.parametrize("f,error,match", [
    (lambda x: np.linalg.eigh(x, UPLO="X"), ValueError, "UPLO argument must be 'L' or 'U'"),
    (lambda x: np.linalg.eigvalsh(x[..., :2]), np.linalg.LinAlgError, "must be square"),
    (lambda x: np.linalg.svd(x[0, 0]), np.linalg.LinAlgError, "at least two-dimensional"),
    (lambda x: np.linalg.qr(x, mode="thin"), ValueError, "Unrecognized mode 'thin'"),
    (lambda x: np.linalg.qr(x, mode="raw"), UnsupportedError, "mode='raw'"),
    (lambda x: np.linalg.cond(x[:, :0]), np.linalg.LinAlgError, "empty arrays")])
def test_argument_errors_are_numpys_at_the_users_line(f, error, match):
    with pytest.raises(error, match=match) as info:
        BACKENDS["numpy"](f)(TALL)
    assert "test_linalg_decompositions.py" in str(info.value)


def test_hermitian_svd_rank_and_pinv_match_numpy():
    indefinite = SYM[0]
    singular = LOW_RANK @ LOW_RANK.T - 3 * LOW_RANK @ LOW_RANK.T       # symmetric, rank 2
    f = BACKENDS["numpy"](lambda a, b: (*np.linalg.svd(a, hermitian=True),
                                        np.linalg.svd(a, compute_uv=False, hermitian=True),
                                        np.linalg.matrix_rank(b, hermitian=True),
                                        np.linalg.pinv(b, hermitian=True),
                                        np.linalg.matrix_rank(b, tol=1.0),
                                        np.linalg.pinv(b, rtol=None)))
    want = (*np.linalg.svd(indefinite, hermitian=True),
            np.linalg.svd(indefinite, compute_uv=False, hermitian=True),
            np.linalg.matrix_rank(singular, hermitian=True),
            np.linalg.pinv(singular, hermitian=True), np.linalg.matrix_rank(singular, tol=1.0),
            np.linalg.pinv(singular, rtol=None))
    assert_matches(f(indefinite, singular), want, rtol=1e-10, atol=1e-12)


# -- derivatives: JAX's rules, against central differences in float64 -------------------------

def _sym(x):
    """Symmetric in every entry of x: NumPy reads one triangle, the rules take both."""
    return (x + np.swapaxes(x, -1, -2)) / 2


C3 = RNG.standard_normal((3, 3))


def _eigh_invariant(x):
    w, v = np.linalg.eigh(_sym(x))
    return w * np.arange(1.0, 4.0) + np.sum(v ** 2 * C3, -1) + np.linalg.eigvalsh(_sym(x), "U")


def _svd_invariant(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return np.concatenate([np.sum(u ** 2, -2) * s, np.sum(vh ** 2 * np.arange(vh.shape[-1]), -1),
                           np.linalg.svd(x, compute_uv=False) ** 2], axis=-1)


def _square_svd_invariant(x):
    u, s, vh = np.linalg.svd(x)      # full_matrices=True: fine for square matrices
    return np.sum(((u * s[..., None, :]) @ vh - C3) ** 2) + np.linalg.norm(x, "nuc")


def _qr_parts(x):
    q, r = np.linalg.qr(x)
    rows = [(0, 0)] * (x.ndim - 2) + [(0, x.shape[-2] - x.shape[-1]), (0, 0)]
    return q * 2.0 + np.pad(r, rows) + np.sum(np.linalg.qr(x, "r"), -2, keepdims=True)


@pytest.mark.parametrize("f,x", [
    (_eigh_invariant, SYM), (_svd_invariant, TALL), (_svd_invariant, WIDE),
    (_square_svd_invariant, SYM[0]), (np.linalg.pinv, TALL[0]), (_qr_parts, TALL),
    (lambda x: np.linalg.qr(x, "complete")[0] @ C3, SYM[1]),
    (lambda x: np.linalg.norm(x, 2) - np.linalg.norm(x, -2), WIDE)],
    ids=["eigh", "svd-tall", "svd-wide", "svd-square-full", "pinv", "qr", "qr-complete-square",
         "norm-2"])
def test_gradients_and_tangents_of_sign_invariant_functions_match_finite_differences(f, x):
    check_grad(f, x)
    check_jvp(f, x)


def test_forward_mode_agrees_with_reverse_mode():
    def f(x):
        w, v = np.linalg.eigh(_sym(x[:3]))
        q, r = np.linalg.qr(x)
        return np.concatenate([w, np.sum(v ** 2, 0), np.linalg.svd(x, compute_uv=False),
                               r.ravel(), np.abs(q).ravel()])
    x = TALL[0]
    fwd = ijit(tj.jacfwd(f))(x)
    rev = ijit(tj.jacrev(f))(x)
    np.testing.assert_allclose(fwd, rev, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f,x,match", [
    (lambda x: np.sum(np.linalg.svd(x)[0] ** 2), TALL[0], "full_matrices=True"),
    (lambda x: np.sum(np.linalg.qr(x)[1]), WIDE, "defined for m >= n"),
    (lambda x: np.sum(np.linalg.qr(x, "complete")[0]), TALL[0], "defined for m >= n")])
def test_derivatives_jax_does_not_define_are_refused_by_name(f, x, match):
    with pytest.raises(UnsupportedError, match=match):
        ijit(tj.grad(f))(x)


def test_linear_algebra_kernels_are_compiled_directly_not_by_numba():
    """Their LAPACK calls were overloads of Python stand-ins and their errors took a message
    argument, which codegen/direct refuses: Numba compiled each such kernel (2-8 s). They are
    intrinsics now, and the errors still NumPy's LinAlgError."""
    from tracejit.codegen import direct
    a = np.random.default_rng(5).standard_normal((4, 3))
    before = set(direct.refused())
    f = tj.jit(lambda a: (np.linalg.svd(a, full_matrices=False)[1], np.linalg.qr(a)[1],
                                np.linalg.eigvalsh(a.T @ a), np.linalg.solve(a.T @ a, a[0]),
                                np.linalg.cholesky(a.T @ a), np.linalg.slogdet(a.T @ a)[1]),
                     tiered=False)
    for got, want in zip(f(a), (np.linalg.svd(a, full_matrices=False)[1],
                                np.linalg.qr(a)[1], np.linalg.eigvalsh(a.T @ a),
                                np.linalg.solve(a.T @ a, a[0]), np.linalg.cholesky(a.T @ a),
                                np.linalg.slogdet(a.T @ a)[1])):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    new = {k: v for k, v in direct.refused().items() if k not in before}
    assert not new, list(new.values())
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        tj.jit(np.linalg.solve, tiered=False)(np.zeros((2, 2)), np.ones(2))


def test_pinv_of_empty_matrices_is_numpys_empty_transpose():
    # NumPy returns early (no singular value to take the largest of): shape [..., n, m]
    f = BACKENDS["compiled"](lambda a, b, i: (np.linalg.pinv(a), np.linalg.pinv(b, rtol=None),
                                              np.linalg.pinv(i)))
    args = (np.zeros((2, 0, 3)), np.zeros((3, 0), np.float32), np.zeros((0, 2), np.int64))
    assert_matches(f(*args), (np.linalg.pinv(args[0]), np.linalg.pinv(args[1], rtol=None),
                              np.linalg.pinv(args[2])))


def test_gradients_of_the_values_alone_are_finite_at_repeated_values():
    """Only w of eigh (s of svd) used: the vectors' zero cotangent adds nothing, as under
    JAX's symbolic zeros, where inf * 0 made every entry nan; the gradient is JAX's
    v diag(c) v.T (u diag(c) vh), for whichever vectors LAPACK picked."""
    c = np.array([1.0, 2.0, 3.0])
    tall = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])          # a zero singular value

    def f(a, d, t):
        return (np.sum(np.linalg.eigh(a)[0] * c) + np.sum(np.linalg.svd(d)[1] * c)
                + np.sum(np.linalg.svd(t, full_matrices=False)[1] * c[:2])
                + np.sum(np.linalg.svd(t.T, full_matrices=False)[1] * c[:2]))
    eye, diag = np.eye(3), np.diag([2.0, 2.0, 1.0])
    got = ijit(tj.grad(f, argnums=(0, 1, 2)))(eye, diag, tall)
    u, _, vh = np.linalg.svd(tall, full_matrices=False)
    ut, _, vht = np.linalg.svd(tall.T, full_matrices=False)
    want = (np.diag(c), np.linalg.svd(diag)[0] @ np.diag(c) @ np.linalg.svd(diag)[2],
            u @ np.diag(c[:2]) @ vh + (ut @ np.diag(c[:2]) @ vht).T)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-12)
