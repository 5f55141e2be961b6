"""NumPy and SciPy functions that third-party model code uses (issue 13): np.rot90,
np.append, np.linspace with traced endpoints, indexing with a Python range, and SciPy's
expit, logit and erf, each against NumPy or SciPy, compiled, with gradients where they have one."""
import numpy as np
import pytest
import scipy.special

import tracejit

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5))


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
@pytest.mark.parametrize("axes", [(0, 1), (1, 2), (2, 0)])
def test_rot90_matches_numpy(k, axes):
    f = tracejit.jit(lambda x: np.rot90(x, k, axes), tiered=False)
    np.testing.assert_array_equal(f(X), np.rot90(X, k, axes))


@pytest.mark.parametrize("axis", [None, 0, 2])
def test_append_matches_numpy(axis):
    v = RNG.standard_normal((3, 4, 2)) if axis == 2 else RNG.standard_normal((1, 4, 5))
    f = tracejit.jit(lambda x, v: np.append(x, v, axis=axis), tiered=False)
    np.testing.assert_array_equal(f(X, v), np.append(X, v, axis=axis))


@pytest.mark.parametrize("num,endpoint", [(5, True), (5, False), (1, True), (0, True),
                                          (50, True)])
def test_linspace_with_traced_endpoints_matches_numpy(num, endpoint):
    f = tracejit.jit(lambda a, b: np.linspace(a, b, num, endpoint=endpoint), tiered=False)
    for a, b in [(np.float64(-1.5), np.float64(2.25)), (np.float32(0), np.float32(1))]:
        got, want = f(a, b), np.linspace(a, b, num, endpoint=endpoint)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_linspace_gradient_with_respect_to_its_endpoints():
    def total(a, b):
        return (np.linspace(a, b, 7) ** 2).sum()
    a, b = np.float64(-0.5), np.float64(1.5)
    ga, gb = tracejit.grad(total, argnums=(0, 1))(a, b)
    t = np.linspace(0, 1, 7)
    y = a + (b - a) * t
    np.testing.assert_allclose([ga, gb], [(2 * y * (1 - t)).sum(), (2 * y * t).sum()],
                               rtol=1e-12)


def test_indexing_with_a_python_range_picks_one_element_per_row():
    probs = RNG.random((6, 4))
    y = np.array([0, 3, 1, 2, 2, 0])
    f = tracejit.jit(lambda p, y: -np.log(p[range(6), y]).mean(), tiered=False)
    np.testing.assert_allclose(f(probs, y), -np.log(probs[range(6), y]).mean(), rtol=1e-12)


@pytest.mark.parametrize("name", ["expit", "logit", "erf"])
def test_scipy_special_functions_match_scipy_with_their_gradients(name):
    fn = getattr(scipy.special, name)
    x = np.linspace(0.05, 0.95, 9) if name == "logit" else np.linspace(-3, 3, 9)
    f = tracejit.jit(lambda x: fn(x), tiered=False)
    np.testing.assert_allclose(f(x), fn(x), rtol=1e-12, atol=1e-15)
    g = tracejit.grad(lambda x: fn(x).sum())(x)
    eps = 1e-6
    np.testing.assert_allclose(g, (fn(x + eps) - fn(x - eps)) / (2 * eps), rtol=1e-6)


def test_an_unsupported_scipy_function_is_named_by_its_scipy_name():
    with pytest.raises(TypeError, match="scipy.special.gamma"):
        tracejit.jit(lambda x: scipy.special.gamma(x), tiered=False)(np.ones(3))


@pytest.mark.parametrize("window,axis", [(3, None), ((2, 3), None), (2, 1), ((2, 2), (0, -1)),
                                         (5, -1)])
def test_sliding_window_view_matches_numpy(window, axis):
    x = RNG.standard_normal(6) if np.ndim(window) == 0 and axis is None else X[0]
    view = np.lib.stride_tricks.sliding_window_view
    f = tracejit.jit(lambda x: view(x, window, axis), tiered=False)
    np.testing.assert_array_equal(f(x), view(x, window, axis))


def test_sliding_window_view_gradient_counts_each_element_once_per_window():
    view = np.lib.stride_tricks.sliding_window_view
    g = tracejit.grad(lambda x: view(x, 3).sum())(np.zeros(6))
    np.testing.assert_array_equal(g, [1, 2, 3, 3, 2, 1])


def test_as_strided_is_refused_pointing_to_sliding_window_view():
    with pytest.raises(TypeError, match="sliding_window_view"):
        tracejit.jit(lambda x: np.lib.stride_tricks.as_strided(x, (3, 3), (8, 8)),
                     tiered=False)(np.ones(5))


def test_comparing_a_traced_array_with_a_string_is_refused_naming_the_line():
    with pytest.raises(TypeError, match=r"the string 'relu'") as info:
        tracejit.jit(lambda x: x == "relu", tiered=False)(np.ones(3))
    assert "test_numpy_functions_from_real_code.py:" in str(info.value)
    assert "static argument" in str(info.value)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_add_and_multiply_accumulate_match_numpy(axis):
    x = np.random.default_rng(0).uniform(0.5, 1.5, (4, 5))
    for ufunc in (np.add, np.multiply):
        def f(x, ufunc=ufunc):
            return ufunc.accumulate(x, axis=axis), ufunc.accumulate(x)
        for got, want in zip(tracejit.jit(f, tiered=False)(x), f(x)):
            np.testing.assert_allclose(got, want, rtol=1e-13)


def test_maximum_accumulate_is_a_running_maximum():
    x = np.array([[1.0, 3.0, 2.0, np.nan, 5.0], [4.0, -1.0, 6.0, 0.0, 2.0]])
    got = tracejit.jit(lambda x: np.maximum.accumulate(x, axis=1))(x)
    np.testing.assert_array_equal(got, np.maximum.accumulate(x, axis=1))
