"""Bugs found by running realistic NumPy programs (k-means, Kalman filters, RNN steps, ...)
under tracejit.jit and tracejit.grad, as a careless user would write them."""
import numpy as np
import pytest

import tracejit


class _RNN:
    def __init__(self):
        self.W = np.eye(3) * 0.5
        self.h = np.zeros(3)

    def step(self, x):
        self.h = np.tanh(self.W @ self.h + x)
        self.steps_seen = 1
        return self.h.sum()


@pytest.mark.parametrize("tiered", [True, False])
def test_jit_of_a_bound_method_that_rebinds_an_attribute_of_self_raises_and_leaves_self_alone(
        tiered):
    # jit(obj.step) traces on obj itself: `self.h = h` left obj.h a Tracer (the next call
    # returned the first call's value, and reading obj.h raised an escaped-tracer error far
    # from its cause)
    rnn = _RNN()
    h = rnn.h
    with pytest.raises(tracejit.EscapedTracerError, match=r"self\.h(.|\n)*@tracejit\.jit"):
        tracejit.jit(rnn.step, tiered=tiered, backend="interpreter")(np.ones(3))
    assert rnn.h is h and not hasattr(rnn, "steps_seen")


def _logsumexp(a, axis=None):
    m = a.max(axis=axis, keepdims=True)
    return np.squeeze(np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m, axis=axis)


@pytest.mark.parametrize("fn", [
    _logsumexp,                                        # np.squeeze of a 1-element array: a view
    lambda x: x[:1].reshape(()),
    lambda x: np.array(x.sum()),
    lambda x: x.sum(keepdims=True)[..., 0],
    lambda x: (np.zeros(()), x.sum()),                 # beside a NumPy scalar
], ids=["squeeze", "reshape", "np_array", "ellipsis_index", "zeros_and_sum"])
@pytest.mark.parametrize("tiered", [True, False])
def test_a_zero_d_array_result_stays_an_array_and_a_reduction_stays_a_numpy_scalar(fn, tiered):
    # a jitted function gave every 0-d result as a NumPy scalar (np.float64), where NumPy
    # gives a 0-d ndarray (writeable: r[...] = 0, r += 1 in place)
    x = np.arange(3.0)
    expected = fn(x)
    jf = tracejit.jit(fn, tiered=tiered, backend="interpreter")
    for _ in range(2):
        got = jf(x)
        pairs = zip(expected, got) if isinstance(expected, tuple) else [(expected, got)]
        for e, g in pairs:
            assert type(g) is type(e)
            np.testing.assert_allclose(g, e)


def _submatrix_update(A, rows, cols, v):
    B = A.copy()
    B[np.ix_(rows, cols)] += v
    return B, A[np.ix_(rows, cols)].sum(axis=0)


@pytest.mark.parametrize("tiered", [True, False])
def test_np_ix_of_traced_indices_selects_and_updates_a_submatrix(tiered):
    # np.ix_ was refused ("not supported under tracing") where its indices were traced
    A = np.arange(12.0).reshape(4, 3)
    rows, cols, v = np.array([0, 2, 3]), np.array([2, 0]), np.ones((3, 2))
    expected = _submatrix_update(A, rows, cols, v)
    jf = tracejit.jit(_submatrix_update, tiered=tiered, backend="interpreter")
    for _ in range(2):
        for e, g in zip(expected, jf(A, rows, cols, v)):
            np.testing.assert_array_equal(g, e)
    grad = tracejit.grad(lambda a: (_submatrix_update(a, rows, cols, v)[1] ** 2).sum())(A)
    expected_grad = np.zeros_like(A)
    expected_grad[np.ix_(rows, cols)] = 2 * A[np.ix_(rows, cols)].sum(axis=0)
    np.testing.assert_allclose(grad, expected_grad)


def test_np_ix_of_a_traced_boolean_mask_is_refused_naming_the_line():
    with pytest.raises(tracejit.UnsupportedError, match=r"np\.ix_ of a boolean mask(.|\n)*"
                                                        r"test_real_programs_found_bugs\.py"):
        tracejit.jit(lambda a, m: a[np.ix_(m, m)], backend="interpreter")(
            np.ones((2, 2)), np.array([True, False]))


def _traces_and_diagonals(A, B, T):
    return (np.einsum("ii->", A), np.einsum("ii->i", A), np.einsum("bii->b", B),
            np.einsum("iji->j", T), np.einsum("...ii->...", B), np.einsum("ii,ij->j", A, A))


@pytest.mark.parametrize("tiered", [True, False])
def test_einsum_with_a_repeated_index_takes_the_diagonal(tiered):
    # np.einsum("ii->", A) (a trace) and "bii->b" (a batch of traces) were refused
    rng = np.random.default_rng(0)
    A, B, T = rng.normal(size=(3, 3)), rng.normal(size=(2, 3, 3)), rng.normal(size=(3, 2, 3))
    expected = _traces_and_diagonals(A, B, T)
    jf = tracejit.jit(_traces_and_diagonals, tiered=tiered, backend="interpreter")
    for _ in range(2):
        for e, g in zip(expected, jf(A, B, T)):
            assert np.shape(g) == np.shape(e)
            np.testing.assert_allclose(g, e, rtol=1e-12)
    grad = tracejit.grad(lambda b: np.einsum("bii->b", b) @ np.array([1.0, 2.0]))(B)
    np.testing.assert_array_equal(grad, np.eye(3) * np.array([1.0, 2.0])[:, None, None])


def test_einsum_repeated_index_of_unequal_sizes_is_numpys_value_error():
    with pytest.raises(ValueError, match="collapsing index 'i'"):
        tracejit.jit(lambda a: np.einsum("ii->i", a), backend="interpreter")(np.ones((2, 3)))
