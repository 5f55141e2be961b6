"""Edge cases of the linear algebra functions under jit, against NumPy and SciPy themselves:
np.linalg.norm's orders and axes, integer and float16 inputs, products of bool arrays, 0-d
operands and Python numbers, and tracejit.scipy given lists of traced values.

Values run on the NumPy tier (no kernel to compile) unless a test says compiled; gradients on
the interpreter (gradcheck)."""
import functools

import numpy as np
import pytest
import scipy.stats

import tracejit
from tracejit.scipy.stats import norm

from gradcheck import check_grad, check_jvp

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))
numpy_tier = functools.partial(tracejit.jit, backend="numpy")
compiled = functools.partial(tracejit.jit, tiered=False)


def assert_same(got, want, rtol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


# -- np.linalg.norm ---------------------------------------------------------------------------

@pytest.mark.parametrize("x", [np.array([100, 100], np.int8), np.array([[1e5, 1e5]], np.int32),
                               np.array([True, True])], ids=["int8", "int32", "bool"])
def test_norm_of_integers_squares_in_float64_without_wrapping(x):
    f = numpy_tier(lambda x: (np.linalg.norm(x), np.linalg.norm(x, axis=-1),
                              np.linalg.vector_norm(x)))
    for got, want in zip(f(x), (np.linalg.norm(x), np.linalg.norm(x, axis=-1),
                                np.linalg.vector_norm(x))):
        assert_same(got, want)


@pytest.mark.parametrize("ord,axis", [(2, None), (2, (0, 1)), (-2, (1, 0)), ("nuc", None)])
def test_spectral_and_nuclear_matrix_norms_are_of_singular_values_not_frobenius(ord, axis):
    assert_same(numpy_tier(lambda x: np.linalg.norm(x, ord, axis))(X),
                np.linalg.norm(X, ord, axis))


@pytest.mark.parametrize("ord", [None, 2, 1, -1, np.inf, -np.inf, 0, 3, -2, 0.5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vector_norms_of_every_order_match_numpy(ord, dtype):
    x = np.concatenate([X, np.zeros((1, 4))]).astype(dtype)
    f = numpy_tier(lambda x: (np.linalg.norm(x, ord, axis=1), np.linalg.norm(x[0], ord),
                              np.linalg.norm(x, ord, axis=0, keepdims=True),
                              np.linalg.vector_norm(x, ord=2 if ord is None else ord,
                                                    axis=(1, 0), keepdims=True)))
    with np.errstate(divide="ignore"):
        want = (np.linalg.norm(x, ord, axis=1), np.linalg.norm(x[0], ord),
                np.linalg.norm(x, ord, axis=0, keepdims=True),
                np.linalg.vector_norm(x, ord=2 if ord is None else ord, axis=(1, 0),
                                      keepdims=True))
        got = f(x)
    for g, w in zip(got, want):
        assert_same(g, w, rtol=1e-6 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf])
def test_matrix_norms_match_numpy_over_any_two_axes(ord):
    x = RNG.standard_normal((3, 4, 5))
    f = numpy_tier(lambda x: (np.linalg.norm(x[0], ord), np.linalg.norm(x, ord, (2, 0)),
                              np.linalg.norm(x, ord, (-1, -3), keepdims=True)))
    want = (np.linalg.norm(x[0], ord), np.linalg.norm(x, ord, (2, 0)),
            np.linalg.norm(x, ord, (-1, -3), keepdims=True))
    for g, w in zip(f(x), want):
        assert_same(g, w)


def test_compiled_norms_match_numpy():
    f = compiled(lambda x: (np.linalg.norm(x, np.inf), np.linalg.norm(x, 1, axis=0),
                            np.linalg.norm(x, 3, axis=1), np.linalg.norm(x, 0, axis=1)))
    want = (np.linalg.norm(X, np.inf), np.linalg.norm(X, 1, axis=0),
            np.linalg.norm(X, 3, axis=1), np.linalg.norm(X, 0, axis=1))
    for g, w in zip(f(X), want):
        assert_same(g, w)


@pytest.mark.parametrize("f,match", [
    (lambda x: np.linalg.norm(x[0], "fro"), "Invalid norm order 'fro' for vectors"),
    (lambda x: np.linalg.norm(x, "nuc", axis=1), "Invalid norm order 'nuc' for vectors"),
    (lambda x: np.linalg.vector_norm(x, ord="fro"), "Invalid norm order 'fro' for vectors"),
    (lambda x: np.linalg.norm(x, 3), "Invalid norm order for matrices"),
    (lambda x: np.linalg.norm(x[None], axis=(0, 1, 2)), "Improper number of dimensions"),
    (lambda x: np.linalg.norm(x[None], np.inf), "Improper number of dimensions"),
    (lambda x: np.linalg.norm(x, axis=(1, -1)), "Duplicate axes"),
], ids=["fro-vector", "nuc-vector", "vector-norm-fro", "ord-3-matrix", "three-axes",
        "3d-inf", "duplicate"])
def test_invalid_norm_orders_and_axes_raise_numpys_value_error(f, match):
    with pytest.raises(ValueError):
        f(X)
    with pytest.raises(ValueError, match=match):
        numpy_tier(f)(X)


@pytest.mark.parametrize("ord,axis", [(np.inf, 1), (-np.inf, 0), (1, 1), (-1, 0), (3, 1),
                                      (-2, 0), (np.inf, None), (1, None), (-1, (1, 0))],
                         ids=lambda v: str(v).replace(" ", ""))
def test_norm_gradients_match_finite_differences(ord, axis):
    check_grad(lambda x: np.linalg.norm(x, ord, axis), X)
    check_jvp(lambda x: np.linalg.norm(x, ord, axis), X)


# -- products ---------------------------------------------------------------------------------

def test_inner_with_a_0d_operand_multiplies_as_numpy():
    f = numpy_tier(lambda s, x: (np.inner(s, x), np.inner(x, s)))
    for g, w in zip(f(np.float64(2.0), X), (np.inner(2.0, X), np.inner(X, 2.0))):
        assert_same(g, w)


def test_vecdot_keeps_the_operands_dtype_and_needs_equal_last_axes():
    a = np.full((2, 3), 100, np.int8)
    b = RNG.random((2, 3)) > 0.5
    f = numpy_tier(lambda a, b: (np.vecdot(a, a), np.vecdot(b, b), np.vecdot(a, b)))
    for g, w in zip(f(a, b), (np.vecdot(a, a), np.vecdot(b, b), np.vecdot(a, b))):
        assert_same(g, w)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        numpy_tier(lambda x, y: np.vecdot(x, y))(X, np.ones(1))


@pytest.mark.parametrize("jit", [numpy_tier, compiled], ids=["numpy-tier", "compiled"])
def test_products_of_bool_arrays_are_an_or_of_ands(jit):
    a, b, v = RNG.random((2, 3, 4)) > 0.7, RNG.random((4, 5)) > 0.7, RNG.random(4) > 0.5
    f = jit(lambda a, b, v: (a @ b, np.dot(v, v), np.dot(a, b), np.inner(a, a[0]),
                             np.tensordot(a, b, 1), v @ b))
    want = (a @ b, np.dot(v, v), np.dot(a, b), np.inner(a, a[0]), np.tensordot(a, b, 1), v @ b)
    for g, w in zip(f(a, b, v), want):
        assert_same(g, w)


def test_dot_inner_outer_and_tensordot_take_python_numbers_as_int64_and_float64_arrays():
    """They convert their operands with np.asarray, unlike ufuncs: no weak scalars."""
    i8, f32 = np.array([1, 2, 100], np.int8), np.array([1, 2, 3], np.float32)

    def f(i8, f32):
        return (np.dot(i8, 3), np.inner(i8, 3), np.outer(i8, 3), np.dot(f32, 2.5),
                np.inner(f32, 2.5), np.outer(f32, 2.5), np.dot(f32[0], 3), i8.dot(3),
                np.tensordot(f32, 2.5, 0), np.tensordot(i8, 3, 0))
    for g, w in zip(numpy_tier(f)(i8, f32), f(i8, f32)):
        assert_same(g, w)


def test_float16_vecdot_and_vdot_round_once_as_numpys_dot_loop():
    """NumPy's half dot multiplies and adds in float32 and rounds the sum once."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((6, 200)).astype(np.float16) for _ in range(2))
    got = numpy_tier(lambda a, b: (np.vecdot(a, b), np.vdot(a[0], b[0])))(a, b)
    for g, w in zip(got, (np.vecdot(a, b), np.vdot(a[0], b[0]))):
        assert g.dtype == w.dtype == np.float16
        np.testing.assert_array_equal(g, w)


# -- tracejit.scipy ---------------------------------------------------------------------------

def test_norm_logpdf_takes_lists_holding_traced_values_as_scipy_does():
    x = np.array([0.5, 2.0])
    got = numpy_tier(lambda x: (norm.logpdf([x[0], x[1]]), norm.logpdf(1.0, 0.0, [x[0], 1])))(x)
    want = (scipy.stats.norm.logpdf(x), scipy.stats.norm.logpdf(1.0, 0.0, [x[0], 1]))
    for g, w in zip(got, want):
        assert_same(g, w)


@pytest.mark.parametrize("name, fn, shapes", [
    ("matmul", lambda a, b: np.linalg.matmul(a, b), [(2, 3, 4), (2, 4, 3)]),
    ("vecdot", lambda a, b: np.linalg.vecdot(a, b), [(2, 3, 4), (2, 3, 4)]),
    ("outer", lambda a, b: np.linalg.outer(a, b), [(4,), (3,)]),
    ("tensordot", lambda a, b: np.linalg.tensordot(a, b, axes=1), [(2, 3, 4), (4, 3)]),
    ("diagonal", lambda a: np.linalg.diagonal(a, offset=1), [(2, 3, 4)]),
    ("trace", lambda a: np.linalg.trace(a, offset=1), [(2, 3, 4)]),
    ("matrix_transpose", lambda a: np.linalg.matrix_transpose(a) * 2, [(2, 3, 4)]),
    ("matrix_norm", lambda a: np.linalg.matrix_norm(a), [(2, 3, 4)]),
    ("matrix_norm_1", lambda a: np.linalg.matrix_norm(a, ord=1, keepdims=True), [(2, 3, 4)]),
])
def test_np_linalg_array_api_spellings_work_over_the_last_two_axes(name, fn, shapes):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in shapes]
    got, want = tracejit.jit(fn)(*args), fn(*args)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_np_linalg_outer_refuses_non_vectors_as_numpy():
    with pytest.raises(ValueError, match="one-dimensional"):
        tracejit.jit(lambda a, b: np.linalg.outer(a, b))(np.ones((2, 2)), np.ones(2))


def test_logit_is_scipys_bit_for_bit_near_one_half_and_at_the_ends():
    """SciPy takes log1p(s) - log1p(-s) on [0.3, 0.65]: log(p / (1 - p)) lost 3e-9 relative
    at 0.5 - 3e-9."""
    import scipy.special as sp
    p = np.array([0.0, 1e-300, 0.1, 0.3, 0.5 - 3e-9, 0.5, 0.6, 0.65, 0.9, 1.0, np.nan, -1, 2])
    with np.errstate(all="ignore"):
        want = sp.logit(p)
        for f in (tracejit.jit(lambda p: sp.logit(p)),
                  tracejit.jit(lambda p: sp.logit(p), backend="interpreter")):
            np.testing.assert_array_equal(f(p), want)
        p32 = p.astype(np.float32)
        np.testing.assert_array_equal(tracejit.jit(lambda p: sp.logit(p))(p32), sp.logit(p32))
    q = np.array([0.1, 0.4, 0.5, 0.9])
    np.testing.assert_allclose(tracejit.grad(lambda p: sp.logit(p).sum())(q),
                               1 / (q * (1 - q)), rtol=1e-12)
