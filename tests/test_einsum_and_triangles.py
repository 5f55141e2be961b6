"""np.tril / np.triu of 1-D and batched arrays, and np.einsum / np.vdot with NumPy 2's dtype
and broadcasting rules: sums in the operands' dtype (int8 wraps, bool is logical or), size-1
labels and '...' dimensions that broadcast, and NumPy's ValueErrors naming the user's line.

Every result is compared with NumPy (dtype, shape, values: exact but for float64, to 1e-12)
untiered and in the default tiered mode (its first call on the NumPy tier, then compiled);
gradients against central differences in float64.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import tracejit as tj

HERE = os.path.basename(__file__)
RNG = np.random.default_rng(0)
EPS = 1e-6


def results(fn, *args):
    """fn's results untiered, then in the default tiered mode: first call, then compiled."""
    out = [tj.jit(fn, tiered=False)(*args)]
    tiered = tj.jit(fn, tiered=True)
    out.append(tiered(*args))
    tiered.wait_compiled()
    out.append(tiered(*args))
    return out


def assert_matches(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_matches(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                  want.dtype, want.shape)
    if want.dtype == np.float64:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def assert_like_numpy(fn, *args):
    want = fn(*args)
    for got in results(fn, *args):
        assert_matches(got, want)


def assert_raises_at_line(exc, fn, line, *args, match=None):
    """Raises NumPy's exception type, naming the user's line, untiered and tiered."""
    with pytest.raises(exc):
        fn(*args)                                           # NumPy refuses it too
    for tiered in (False, True):
        with pytest.raises(exc, match=match) as info:
            tj.jit(fn, tiered=tiered)(*args)
        assert f"{HERE}:{line}" in str(info.value), str(info.value)


def finite_difference_grad(f, x):
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += EPS
        down[i] -= EPS
        g[i] = (f(up) - f(down)) / (2 * EPS)
    return g


def assert_grads_match_finite_differences(loss, *args):
    for i in range(len(args)):
        def partial(xi, i=i):
            return loss(*args[:i], xi, *args[i + 1:])
        want = finite_difference_grad(partial, args[i])
        for got in results(tj.grad(loss, argnums=i), *args):
            assert got.dtype == np.float64 and got.shape == args[i].shape
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


# -- np.tril and np.triu ----------------------------------------------------------------------

def triangles(v, m, x3):
    return (np.tril(v), np.triu(v), np.tril(v, -1), np.triu(v, 1), np.tril(v, 2), np.triu(v, -2),
            np.tril(m, 1), np.triu(m, -1), np.tril(x3), np.triu(x3, 1), np.tril(x3, -2))


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.bool_])
def test_tril_and_triu_of_a_1d_array_are_its_row_repeated_and_batches_keep_numpys_k(dtype):
    v = np.arange(1, 5).astype(dtype)
    m = RNG.integers(-3, 4, (3, 5)).astype(dtype)
    x3 = RNG.integers(-3, 4, (2, 4, 3)).astype(dtype)
    assert_like_numpy(triangles, v, m, x3)


def test_tril_of_a_0d_array_raises_numpys_type_error_at_the_users_line():
    def f(x):
        return np.tril(x)
    assert_raises_at_line(TypeError, f, f.__code__.co_firstlineno + 1, np.float64(3.0))


def test_tril_and_triu_of_a_1d_array_have_the_gradients_finite_differences_give():
    v = RNG.standard_normal(4)
    w1, w2 = RNG.standard_normal((2, 4, 4))

    def loss(v):
        return np.sum(np.tril(v, -1) * w1) + np.sum(np.triu(v, 1) * w2)
    assert_grads_match_finite_differences(loss, v)


# -- einsum and vdot dtypes -------------------------------------------------------------------

def contractions(a, v, w):
    return (np.einsum("ij->i", a), np.einsum("ij->", a), np.einsum("ij,ij->i", a, a),
            np.einsum("ij,j->i", a, v), np.einsum("ij,i->i", a, w), np.einsum("i,i", v, v),
            np.einsum("ij,jk", a, a.T), np.einsum("i,j,j->i", w, v, v), np.einsum("ij->ji", a))


def small_ints(shape, dtype):
    """0..3: sums of 200 products reach 1800, beyond int8 and uint8 (which wrap around) and
    exact in float16."""
    return RNG.integers(0, 4, shape).astype(dtype)


def test_einsum_of_int8_operands_keeps_int8_and_wraps():
    """NumPy sums in the operands' dtype, where np.sum would give int64."""
    a, v, w = small_ints((2, 200), np.int8), small_ints(200, np.int8), small_ints(2, np.int8)
    assert np.einsum("ij->i", np.ones((2, 200), np.int8)).tolist() == [-56, -56]
    assert_like_numpy(contractions, a, v, w)
    assert_like_numpy(lambda a: np.einsum("ij->i", a), np.ones((2, 200), np.int8))


def test_einsum_of_int16_uint8_float16_and_float32_operands_keeps_their_dtype():
    for dtype in (np.int16, np.uint8, np.float16, np.float32):
        a, v, w = small_ints((2, 200), dtype), small_ints(200, dtype), small_ints(2, dtype)
        assert_like_numpy(contractions, a, v, w)


def test_einsum_of_bool_operands_is_bool_the_logical_or_of_products():
    a = RNG.random((2, 200)) < 0.01
    v, w = RNG.random(200) < 0.01, np.array([True, False])
    assert_like_numpy(contractions, a, v, w)
    assert_like_numpy(lambda a: np.einsum("ij->j", a), np.ones((3, 2), bool))
    assert_like_numpy(lambda a, b: np.einsum("ij,j->i", a, b), a, np.zeros(200, bool))


def test_vdot_keeps_the_operands_dtype():
    """int8 wraps around, bool is the logical or of the products, as NumPy's."""
    for dtype in (np.int8, np.int16, np.uint8, np.bool_, np.float16, np.float32):
        a = (RNG.random((20, 10)) < 0.01).astype(dtype) if dtype == np.bool_ else small_ints(
            (20, 10), dtype)
        assert_like_numpy(lambda a, b: np.vdot(a, b), a, a[::-1])
        assert_like_numpy(lambda a: np.vdot(a, a), np.ones(200, dtype))


def test_einsum_and_vdot_of_mixed_dtypes_compute_in_their_result_type():
    """int8 with int16 sums in int16 (no int8 wraparound first); a Python scalar operand is
    an array to einsum and vdot (int64), not a weak scalar."""
    a, w = np.ones((2, 200), np.int8), np.ones(2, np.int16)
    assert_like_numpy(lambda a, w: np.einsum("ij,i->i", a, w), a, w)
    assert_like_numpy(lambda a: (np.einsum("ij,->ij", a, 2), np.einsum("ij,->i", a, 2)), a)
    assert_like_numpy(lambda a, b: np.vdot(a, b), np.ones(200, np.int8), np.ones(200, np.int16))
    assert_like_numpy(lambda a: np.vdot(a, 2), np.ones(1, np.int8))


def test_einsum_dtype_keyword_sets_the_dtype_and_refuses_unsafe_casts_as_numpy_does():
    a = np.ones((2, 200), np.int8)
    assert_like_numpy(lambda a: (np.einsum("ij->i", a, dtype=np.int64),
                                 np.einsum("ij,ij->i", a, a, dtype=np.float32)), a)
    assert_like_numpy(lambda a: np.einsum("ij->i", a, dtype=np.int8, casting="unsafe"), a * 1.5)

    def f(a):
        return np.einsum("ij->i", a, dtype=np.int8)
    assert_raises_at_line(TypeError, f, f.__code__.co_firstlineno + 1, a * 1.5)


def test_vdot_of_operands_with_different_sizes_raises_numpys_value_error_at_the_users_line():
    def f(a, b):
        return np.vdot(a, b)
    assert_raises_at_line(ValueError, f, f.__code__.co_firstlineno + 1, np.ones(3), np.ones(1))


# -- einsum broadcasting ----------------------------------------------------------------------

BROADCASTS = [
    ("ij,ij->i", (3, 2), (1, 2)),
    ("ij,ij->", (3, 1), (1, 2)),
    ("...i,...i->...", (2, 1, 3), (4, 3)),
    ("i...,i...->...", (3, 2, 1), (3, 1, 4)),
    ("...ij,...jk->...ik", (2, 1, 2, 3), (5, 3, 4)),
]


@pytest.mark.parametrize("subscripts,sa,sb", BROADCASTS)
def test_einsum_broadcasts_size_1_labels_and_ellipsis_dimensions(subscripts, sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    assert_like_numpy(lambda a, b: np.einsum(subscripts, a, b), a, b)


@pytest.mark.parametrize("subscripts,sa,sb", BROADCASTS[:4])
def test_einsum_broadcasting_has_the_gradients_finite_differences_give(subscripts, sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    w = RNG.standard_normal(np.einsum(subscripts, a, b).shape)

    def loss(a, b):
        return np.sum(np.einsum(subscripts, a, b) * w)
    assert_grads_match_finite_differences(loss, a, b)


def test_einsum_ellipsis_missing_from_the_output_raises_numpys_value_error_at_the_users_line():
    def f(x):
        return np.einsum("i...->i", x)
    assert_raises_at_line(ValueError, f, f.__code__.co_firstlineno + 1, np.ones((2, 3, 4)),
                          match="no '...' ellipsis")
    assert_like_numpy(f, np.arange(3.0))        # '...' of no dimensions needs none


def test_einsum_labels_of_different_sizes_raise_numpys_value_error_at_the_users_line():
    def f(a, b):
        return np.einsum("ij,ij->i", a, b)

    def g(a, b):
        return np.einsum("...i,...i->...", a, b)
    assert_raises_at_line(ValueError, f, f.__code__.co_firstlineno + 1, np.ones((3, 2)),
                          np.ones((2, 2)), match="label 'i' has size 3")
    assert_raises_at_line(ValueError, g, g.__code__.co_firstlineno + 1, np.ones((2, 3)),
                          np.ones((4, 3)), match="'...'")
