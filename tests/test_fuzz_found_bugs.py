"""Bugs found by differential fuzzing of the passes and the compiled CPU backend against NumPy
and the interpreter, each pinned by a small fixed program."""
import numpy as np
import pytest

import tracejit


def _compiled(f):
    return tracejit.jit(f, tiered=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_of_a_product_minus_its_max_is_exactly_one_at_the_max(dtype):
    """Kernels were compiled with fast-math ``contract``: LLVM fused ``a * b - max`` into
    fma(a, b, -max), skipping the product's rounding, so the softmax's ``z - z.max()`` was not
    0 at the max (exp gave 1.001 for float32; a float32 MLP's gradient moved by 1%)."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((4, 1000)) * 100).astype(dtype), \
        (rng.standard_normal((4, 1000)) * 100).astype(dtype)

    def f(a, b):
        z = a * b
        return np.exp(z - z.max(axis=1, keepdims=True))
    got = _compiled(f)(a, b)
    np.testing.assert_array_equal(got.max(axis=1), np.ones(4, dtype))
    np.testing.assert_array_equal(got, f(a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_multiply_add_rounds_the_product_like_numpy(dtype):
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(4097).astype(dtype) for _ in range(3))
    np.testing.assert_array_equal(_compiled(lambda a, b, c: a * b + c)(a, b, c), a * b + c)
    np.testing.assert_array_equal(_compiled(lambda a, b, c: c - a * b)(a, b, c), c - a * b)


INT64 = np.array([-14, 2**63 - 1, -2**63, 40, 2**32, 0], np.int64)


def test_int64_addition_wraps_before_a_comparison():
    """Numba marks signed + - * "nsw" (overflow undefined): LLVM folded ``x + 1 > x`` to True,
    where NumPy's int64 wraps (INT64_MAX + 1 is INT64_MIN)."""
    f = _compiled(lambda x: (x + 1 > x, x - 1 < x))
    with np.errstate(all="ignore"):
        want = (INT64 + 1 > INT64, INT64 - 1 < INT64)
    for g, w in zip(f(INT64), want):
        np.testing.assert_array_equal(g, w)


def test_int64_product_that_wraps_to_zero_converts_to_false():
    """``bool(x * x)`` was folded to ``x != 0``: (2**32)**2 and INT64_MIN**2 wrap to 0."""
    got = _compiled(lambda x: (x * x).astype(bool))(INT64)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, (INT64 * INT64).astype(bool))


def test_float16_var_and_std_of_more_than_65504_elements_divide_as_numpy():
    """float16(70000) is inf: NumPy divides the float16 sums by the count in float64."""
    h = np.array([0, 0.01] * 35000, np.float16)
    for f in (np.var, np.std, lambda x: np.var(x, ddof=1)):
        np.testing.assert_array_equal(tracejit.jit(f)(h), f(h))


def test_clip_promotes_its_three_operands_at_once():
    x = np.array([1, -3], np.int8)
    out = tracejit.jit(lambda x: np.clip(x, 3.0, np.float32(1.5)))(x)
    want = np.clip(x, 3.0, np.float32(1.5))
    assert out.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype, value", [(np.uint8, -1), (np.uint8, 256), (np.uint64, -1),
                                          (np.uint8, (-1, -2)), (np.int8, 1.7)])
def test_pad_casts_one_or_two_fill_values_as_numpy_does(dtype, value):
    x = np.array([[1, 2], [3, 4]], dtype)
    np.testing.assert_array_equal(
        tracejit.jit(lambda x: np.pad(x, 1, constant_values=value))(x),
        np.pad(x, 1, constant_values=value))


def test_pad_refuses_an_out_of_range_int_where_numpy_does():
    x = np.array([1, 2], np.int8)
    with pytest.raises(OverflowError):
        tracejit.jit(lambda x: np.pad(x, 1, constant_values=300))(x)


@pytest.mark.parametrize("shape, idx, axis", [((1, 0, 0), [0, -1, 0], -1), ((0, 3), [7], 1)])
def test_take_with_an_empty_result_checks_no_index(shape, idx, axis):
    e, i = np.zeros(shape), np.array(idx)
    for kw in ({}, {"backend": "interpreter"}):
        out = tracejit.jit(lambda e: np.take(e, i, axis=axis), **kw)(e)
        assert out.shape == np.take(e, i, axis=axis).shape


def test_take_from_an_empty_axis_into_a_non_empty_result_is_numpys_index_error():
    with pytest.raises(IndexError):
        tracejit.jit(lambda e: np.take(e, np.array([0]), axis=-1))(np.zeros((1, 2, 0)))
