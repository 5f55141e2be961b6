"""np.histogram of traced values (issue 13, NPBench's azimint_hist): NumPy's results to the bit
(dtypes, the bin of a value on an edge, values outside the range dropped, NumPy's rounding of
weighted sums), gradients with respect to the weights, and clear refusals of what needs the
data's values to trace."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tracejit as tj
from gradcheck import check_grad
from tracejit import UnsupportedError

numpy_tier = functools.partial(tj.jit, backend="numpy")
rng = np.random.default_rng(0)
X = rng.random(200)
W = rng.standard_normal(200)
ON_EDGES = np.repeat(np.arange(11) / 10, 3)       # ties on every edge, and the max itself
INTS = np.array([-128, 127, 0, 5, 5, -3], np.int8)
EDGES_2D = np.ones((2, 2))
OUTSIDE = np.array([np.nan, 0.1, np.inf, -np.inf, 0.5, 0.25, 0.0, -0.1, 0.7])


def assert_same(got, want):
    """Bit for bit, in NumPy's dtypes."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        np.testing.assert_array_equal(g, w)


CASES = {
    "random": (lambda a: np.histogram(a, 10), X),
    "ties on the edges": (lambda a: np.histogram(a, 10), ON_EDGES),
    "all equal (range widened by 0.5)": (lambda a: np.histogram(a, 5), np.full(4, 3.0)),
    "range excludes values": (lambda a: np.histogram(a, 7, range=(0.25, 0.75)), X),
    "nan and inf outside the range": (lambda a: np.histogram(a, 4, range=(0.0, 0.5)), OUTSIDE),
    "equal range": (lambda a: np.histogram(a, 3, range=(1, 1)), np.ones(4)),
    "float32": (lambda a: np.histogram(a.astype(np.float32), 9), X),
    "float32, Python range": (lambda a: np.histogram(a.astype(np.float32), 7,
                                                     range=(0.1, 0.9)), X),
    "float32, float64 range": (lambda a: np.histogram(a.astype(np.float32), 7, range=(
        np.float64(0.1), np.float64(0.9))), X),
    "int8 (unsigned difference)": (lambda a: np.histogram(a, 4), INTS),
    "int8 range": (lambda a: np.histogram(a, 4, range=(np.int8(-100), np.int8(100))), INTS),
    "integers with ties": (lambda a: np.histogram(a, 4), np.arange(20) // 3),
    "2-D input": (lambda a: np.histogram(a.reshape(20, 10), np.int64(6)), X),
    "empty": (lambda a: np.histogram(a[:0], 3), X),
    "weights": (lambda a, w: np.histogram(a, 10, weights=w), X, W),
    "float32 weights": (lambda a, w: np.histogram(a, 10, weights=w.astype(np.float32)), X, W),
    "int32 weights": (lambda a: np.histogram(a, 4, weights=(a * 10).astype(np.int32)), X),
    "bool weights": (lambda a: np.histogram(a, 4, weights=a > 0.5), X),
    "weights, range excludes values": (lambda a, w: np.histogram(a, 3, range=(0.2, 0.6),
                                                                 weights=w), X, W),
    "edges": (lambda a: np.histogram(a, np.array([0.0, 0.1, 0.5, 0.55, 1.0])), X),
    "int edges, values on them": (lambda a: np.histogram(a, [0, 2, 5]), np.arange(7.0)),
    "edges, weights": (lambda a, w: np.histogram(a, np.array([0.0, 0.1, 0.5, 0.9]),
                                                 weights=w), X, W),
    "edges, float32 weights": (lambda a, w: np.histogram(
        a, np.array([0.2, 0.3, 0.8]), weights=w.astype(np.float32)), X, W),
    "edges made in the function": (lambda a: np.histogram(a, np.full(2, 0.5)), ON_EDGES),
    "bin edges alone": (lambda a: (np.histogram_bin_edges(a, 5),), X),
}


@pytest.mark.parametrize("name", CASES)
def test_equals_numpy_bit_for_bit(name):
    f, *args = CASES[name]
    assert_same(numpy_tier(f)(*args), f(*args))


def test_weighted_sums_round_per_block_as_numpy():
    a, w = rng.random(70_000), rng.standard_normal(70_000)     # two of NumPy's blocks
    for f in (lambda a, w: np.histogram(a, 13, weights=w),
              lambda a, w: np.histogram(a, np.array([0.0, 0.3, 0.31, 1.0]), weights=w)):
        assert_same(numpy_tier(f)(a, w), f(a, w))


@pytest.mark.parametrize("weighted", [False, True])
def test_density(weighted):
    def f(a, w):
        return np.histogram(a, 6, density=True, weights=w if weighted else None)

    got, want = numpy_tier(f)(X, np.abs(W)), f(X, np.abs(W))
    assert got[0].dtype == want[0].dtype == np.float64
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)   # n.sum() may add in another order
    assert_same(got[1:], want[1:])


def test_bool_input_warns_and_counts_as_uint8():
    f = numpy_tier(lambda a: np.histogram(a, 3))
    with pytest.warns(RuntimeWarning, match="uint8"):
        got = f(X > 0.3)
    with pytest.warns(RuntimeWarning):
        want = np.histogram(X > 0.3, 3)
    assert_same(got, want)


def test_compiled():
    def f(a, w):
        return (np.histogram(a, 10)[0], np.histogram(a, 10, weights=w),
                np.histogram(a.astype(np.float32), np.array([0.0, 0.2, 0.7, 1.0]), weights=w))

    got = tj.jit(f, tiered=False)(ON_EDGES, np.linspace(-1.0, 2.0, ON_EDGES.size))
    want = f(ON_EDGES, np.linspace(-1.0, 2.0, ON_EDGES.size))
    assert_same(list(_leaves(got)), list(_leaves(want)))


def _leaves(tree):
    for t in tree:
        yield from (_leaves(t) if isinstance(t, tuple) else (t,))


@pytest.mark.parametrize("bins", [4, np.array([0.0, 0.3, 0.35, 0.9, 1.0])])
def test_gradient_with_respect_to_the_weights(bins):
    check_grad(lambda w: np.histogram(X[:40], bins, weights=w)[0], W[:40])
    check_grad(lambda w: np.histogram(X[:40], bins, range=(0.1, 0.8) if np.ndim(bins) == 0
                                      else None, weights=w, density=True)[0], np.abs(W[:40]))


def test_gradient_with_respect_to_the_data_is_zero_not_nan():
    def loss(a, w):
        return np.sum(np.histogram(a, 5, weights=w)[0] * np.arange(5.0))

    g = numpy_tier(tj.grad(loss))(np.concatenate([X[:20], [np.nan]]), W[:21])
    np.testing.assert_array_equal(g, np.zeros(21))
    g = numpy_tier(tj.grad(loss))(ON_EDGES, W[:ON_EDGES.size])
    np.testing.assert_array_equal(g, np.zeros(ON_EDGES.size))


def test_what_needs_the_data_to_trace_is_refused_with_what_to_do():
    with pytest.raises(UnsupportedError,
                       match=r"(?s)bins=.auto.*What to do: pass the number of bins"):
        numpy_tier(lambda a: np.histogram(a, "auto"))(X)
    with pytest.raises(UnsupportedError,
                       match=r"(?s)traced bin edges.*What to do: pass them as NumPy values"):
        numpy_tier(lambda a, e: np.histogram(a, e))(X, np.array([0.0, 0.5, 1.0]))
    with pytest.raises(UnsupportedError, match="traced bin edges or range"):
        numpy_tier(lambda a: np.histogram(a, 3, range=(a.min(), 1.0)))(X)


@pytest.mark.parametrize("call, error", [
    (lambda a: np.histogram(a, 0), "must be positive"),
    (lambda a: np.histogram(a, 2.5), "must be an integer"),
    (lambda a: np.histogram(a, [1.0, 0.0]), "increase monotonically"),
    (lambda a: np.histogram(a, EDGES_2D), "must be 1d"),
    (lambda a: np.histogram(a, 3, range=(1.0, 0.0)), "max must be larger"),
    (lambda a: np.histogram(a, 3, weights=a[:3]), "same shape"),
])
def test_mistakes_numpy_rejects_raise_its_exception(call, error):
    with pytest.raises((ValueError, TypeError), match=error) as info:
        numpy_tier(call)(X)
    with pytest.raises(type(info.value)):
        call(X)
