"""np.cumprod, np.sort / np.argsort, np.gradient, np.pad's modes and np.array of traced values
(issue 13): NumPy's values, dtypes and errors, and derivatives against finite differences.

Most checks run on the NumPy tier or the interpreter (no kernels to compile); the differential
suite (test_numpy_differential.py) runs the same functions compiled.
"""
import numpy as np
import pytest

import tracejit as tj
from gradcheck import check_grad, check_hvp, check_jvp
from tracejit.tracer.errors import UnsupportedError

RNG = np.random.default_rng(0)


def on_numpy(fn):
    return tj.jit(fn, backend="numpy")


def assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


# -- cumprod -----------------------------------------------------------------------------------

@pytest.mark.parametrize("x", [
    np.array([1.5, 0.0, 2.0, -1.0, 3.0]),      # one zero inside
    np.array([0.0, 1.5, 0.0, 2.0, -1.0]),      # a zero first, and a second one
    np.array([1.5, 2.0, -1.0, 3.0, 0.0]),      # a zero last
    np.array([0.0, 0.0, 2.0]),
    np.array([[0.5, 0.0, 2.0, 1.5], [1.2, -0.7, 0.0, 0.0], [0.9, 1.1, -1.3, 2.0]]),
])
def test_cumprod_derivatives_are_exact_with_zeros_in_the_input(x):
    for axis in range(x.ndim):
        f = lambda x: np.cumprod(x, axis=axis) * np.sin(x)  # noqa: E731
        check_grad(f, x)
        check_jvp(f, x)


def test_cumprod_gradient_at_a_zero_is_the_product_around_it():
    # d/dx sum(cumprod([2, 0, 3])) = [1 + x1 + x1 x2, x0 + x0 x2, x0 x1] = [1, 8, 0]: no NaN
    g = on_numpy(tj.grad(lambda x: np.cumprod(x).sum()))(np.array([2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g, [1.0, 8.0, 0.0])


def test_cumprod_second_derivative_with_a_zero():
    check_hvp(lambda x: np.sum(np.cumprod(x) ** 2), np.array([1.5, 0.0, 2.0, -1.0, 0.5]))


def test_cumprod_dtypes_axes_and_0d_follow_numpy():
    i32 = np.array([[3, -2], [4, 5]], np.int32)
    cases = [
        (lambda a: np.cumprod(a), i32), (lambda a: a.cumprod(axis=0), i32),
        (lambda a: np.cumprod(a > 0, axis=1), i32), (lambda a: a.cumprod(dtype=np.float32), i32),
        (lambda a: np.cumprod(a, axis=0), np.array(2.5)), (lambda a: np.cumprod(a), np.array(2.5)),
        (lambda a: np.cumprod(a, axis=-1), np.zeros((2, 0))),
    ]
    for fn, a in cases:
        assert_same(on_numpy(fn)(a), fn(a))
    with pytest.raises(np.exceptions.AxisError):
        on_numpy(lambda a: np.cumprod(a, axis=1))(np.array(2.5))


# -- sort and argsort --------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, None])
def test_sort_derivatives_scatter_through_the_permutation(axis):
    x = RNG.standard_normal((3, 4))           # no ties: the derivative is unique
    check_grad(lambda x: np.sort(x, axis=axis) * np.arange(1.0, 13.0).reshape(
        (12,) if axis is None else (3, 4)), x)
    check_jvp(lambda x: np.sort(x, axis=axis), x)


def test_argsort_carries_no_gradient():
    x = RNG.standard_normal(5)
    g = on_numpy(tj.grad(lambda x: (np.argsort(x) * x).sum()))(x)
    np.testing.assert_array_equal(g, np.argsort(x).astype(float))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_ties_come_in_numpys_order_for_every_kind(backend):
    """Every stage calls NumPy's own sort of the kind: ties in NumPy's (unstable) order."""
    x = RNG.integers(0, 4, (3, 40)).astype(np.float64)
    x[0, 3], x[1, 7], x[2, 0] = np.nan, -0.0, np.nan

    def f(x):
        return tuple(g(x, kind=k) for k in ("quicksort", "heapsort", "stable")
                     for g in (np.argsort, np.sort)) + (x.argsort(axis=0), np.argsort(x, None))
    assert not np.array_equal(np.argsort(x), np.argsort(x, kind="stable"))  # ties do matter
    got = tj.jit(f, backend=backend, tiered=False)(x)
    for g, w in zip(got, f(x)):
        assert_same(g, w)


def test_sort_puts_nan_last_and_accepts_numpys_kind_spellings():
    x = np.array([3.0, np.nan, -1.0, np.inf, -np.inf, 0.5])
    for kind in (None, "q", "Heap", "mergesort", "stable"):
        assert_same(on_numpy(lambda x: np.sort(x, kind=kind))(x), np.sort(x, kind=kind))
    assert_same(on_numpy(lambda x: np.argsort(x, stable=True))(x), np.argsort(x, stable=True))
    assert_same(on_numpy(lambda x: np.argsort(x))(np.array(5.0)), np.argsort(np.array(5.0)))


@pytest.mark.parametrize("call,error", [
    (lambda x: np.sort(x, kind="bogus"), ValueError),
    (lambda x: np.sort(x, kind=1), TypeError),
    (lambda x: np.argsort(x, kind="stable", stable=True), ValueError),
    (lambda x: np.sort(x, order="f"), ValueError),
    (lambda x: np.sort(x, axis=2), np.exceptions.AxisError),
    (lambda x: np.sort(x[0, 0]), np.exceptions.AxisError),
])
def test_sort_rejects_what_numpy_rejects_at_the_users_line(call, error):
    with pytest.raises(error, match="test_numpy_sorting_cumprod_gradient_pad.py"):
        on_numpy(call)(np.ones((2, 3)))


# -- np.gradient ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args,kw", [
    ((), {}), ((0.5,), {"edge_order": 2}), ((2.0, np.array([0.0, 1.0, 3.0, 3.5])), {}),
    ((np.float64(0.3), np.array([0.0, 1.0, 3.0, 3.5])), {"edge_order": 2}),
    ((np.array([0.0, 1.0, 2.0, 3.0]),), {"axis": 1}), ((), {"axis": (1, 0)}),
])
def test_gradient_matches_numpy_in_value_dtype_and_container(args, kw):
    for x in (RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)).astype(np.float32),
              RNG.integers(-5, 5, (3, 4))):
        got, want = on_numpy(lambda x: np.gradient(x, *args, **kw))(x), np.gradient(x, *args, **kw)
        assert type(got) is type(want)
        for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-6 if x.dtype == np.float32 else 1e-14)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_derivatives_match_finite_differences(edge_order):
    x = RNG.standard_normal((3, 5))
    check_grad(lambda x: np.stack(np.gradient(x, edge_order=edge_order)), x)
    check_grad(lambda x, h: np.gradient(x, h, axis=1, edge_order=edge_order), x, np.float64(0.7))
    check_grad(lambda x: np.gradient(x[0], np.array([0.0, 1.0, 3.0, 3.5, 6.0]),
                                     edge_order=edge_order), x)


@pytest.mark.parametrize("call,error", [
    (lambda x, c: np.gradient(x[:2], edge_order=2), ValueError),
    (lambda x, c: np.gradient(x, edge_order=3), ValueError),
    (lambda x, c: np.gradient(x, 1.0, 2.0, 3.0), TypeError),
    (lambda x, c: np.gradient(x, axis=(0, 0)), ValueError),
    (lambda x, c: np.gradient(x, np.ones((3, 4)), axis=0), ValueError),
    (lambda x, c: np.gradient(x, c, axis=1), UnsupportedError),
])
def test_gradient_rejects_bad_spacings_and_traced_coordinates(call, error):
    with pytest.raises(error, match="test_numpy_sorting_cumprod_gradient_pad.py"):
        on_numpy(call)(np.ones((3, 4)), np.arange(4.0))


# -- np.pad --------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["edge", "wrap", "reflect", "symmetric", "empty"])
@pytest.mark.parametrize("width", [2, ((0, 7), (5, 1)), ((1, 0), (9, 9))])
def test_pad_modes_match_numpy_even_wider_than_the_array(mode, width):
    x = RNG.standard_normal((3, 4))
    got = on_numpy(lambda x: np.pad(x, width, mode=mode))(x)
    want = np.pad(x, width, mode=mode) if mode != "empty" else np.pad(x, width)
    assert_same(got, want)                   # mode="empty" leaves values undefined: zeros here


def test_pad_single_element_axes_and_empty_arrays_follow_numpy():
    for mode in ("reflect", "symmetric", "wrap", "edge"):
        assert_same(on_numpy(lambda x: np.pad(x, 3, mode=mode))(np.array([[2.5]])),
                    np.pad(np.array([[2.5]]), 3, mode=mode))
        assert_same(on_numpy(lambda x: np.pad(x, ((0, 0), (1, 2)), mode=mode))(np.ones((0, 2))),
                    np.pad(np.ones((0, 2)), ((0, 0), (1, 2)), mode=mode))
    with pytest.raises(ValueError, match="can't extend empty axis 0"):
        on_numpy(lambda x: np.pad(x, 1, mode="edge"))(np.ones((0, 2)))


@pytest.mark.parametrize("values", [((1, 2), (3, 4)), (5, -6), 1.7, [[7], [8]], -1])
def test_pad_constant_values_per_side_and_axis_cast_like_numpy(values):
    for x in (np.zeros((2, 3)), np.arange(6).reshape(2, 3)):
        assert_same(on_numpy(lambda x: np.pad(x, ((1, 2), (2, 1)), constant_values=values))(x),
                    np.pad(x, ((1, 2), (2, 1)), constant_values=values))
    v = np.float32(0.25)
    assert_same(on_numpy(lambda x, v: np.pad(x, 1, constant_values=v))(np.ones(2, np.float32), v),
                np.pad(np.ones(2, np.float32), 1, constant_values=v))


def test_one_constant_on_every_side_is_one_pad_that_fills_only_the_borders():
    """One copy of the array, as np.pad makes; the compiled pad writes the borders and the
    interior once each (filling the whole buffer first wrote it twice)."""
    def f(x):
        return np.pad(x, ((1, 2), (0, 3), (2, 0)), constant_values=-1.5), np.pad(x, 2)
    x = RNG.standard_normal((3, 4, 5))
    ir = str(tj.make_ir(f)(x))
    assert ir.count(" = pad ") == 2
    for got, want in zip(tj.jit(f)(x), f(x)):
        assert_same(got, want)


@pytest.mark.parametrize("mode", ["constant", "edge", "wrap", "reflect", "symmetric"])
def test_pad_derivatives_match_finite_differences(mode):
    x = RNG.standard_normal((3, 4))
    check_grad(lambda x: np.pad(x, ((1, 5), (4, 2)), mode=mode), x)
    check_jvp(lambda x: np.pad(x, ((1, 5), (4, 2)), mode=mode), x)
    check_grad(lambda x, v: np.pad(x, 2, constant_values=v), x, np.float64(1.5))


@pytest.mark.parametrize("kw,error,match", [
    ({"mode": "mean"}, UnsupportedError, "mode='mean'"),
    ({"mode": "linear_ramp"}, UnsupportedError, "mode='linear_ramp'"),
    ({"mode": "maximum", "stat_length": 2}, UnsupportedError, "mode='maximum'"),
    ({"mode": lambda *a: None}, UnsupportedError, "function as its mode"),
    ({"mode": "reflect", "reflect_type": "odd"}, UnsupportedError, "reflect_type='odd'"),
    ({"mode": "bogus"}, ValueError, "mode 'bogus' is not supported"),
    ({"mode": "edge", "constant_values": 1}, ValueError, "unsupported keyword arguments"),
])
def test_pad_refuses_other_modes_by_name(kw, error, match):
    with pytest.raises(error, match=match):
        on_numpy(lambda x: np.pad(x, 1, **kw))(np.ones((2, 2)))
    with pytest.raises(ValueError, match="negative"):
        on_numpy(lambda x: np.pad(x, -1))(np.ones((2, 2)))
    with pytest.raises(TypeError, match="integral"):
        on_numpy(lambda x: np.pad(x, 1.5))(np.ones((2, 2)))


# -- np.array of traced values -------------------------------------------------------------------

def test_np_array_of_traced_values_traces_as_numpy_converts():
    def f(x):
        s, m = x.sum(), x.max()
        return (np.array([s, m, 1.0]), np.asarray([[x[0], 2], (x[1], m)]),
                np.array(x[1:], dtype=np.float32, ndmin=2), np.asanyarray(s),
                np.array([1, 2]), np.ascontiguousarray(x.T))
    x = np.arange(3.0)
    for g, w in zip(on_numpy(f)(x), f(x)):
        assert_same(g, w)


def test_np_array_of_traced_values_has_a_gradient():
    check_grad(lambda x: (np.array([x.sum(), x[0] * x[1]]) ** 2).sum(), np.arange(1.0, 4.0))


def test_np_r_and_np_c_of_traced_values_join_as_numpy_joins():
    def f(x, v):
        return np.c_[np.ones(3), x], np.c_[v, v * 2], np.r_[v, 1.0, v[:2]], np.c_[x, v]
    x, v = np.arange(6.0).reshape(3, 2), np.arange(3.0)
    for g, w in zip(on_numpy(f)(x, v), f(x, v)):
        assert_same(g, w)


def test_np_array_is_numpys_own_outside_traces_even_after_an_error():
    original = np.array
    with pytest.raises(ZeroDivisionError):
        on_numpy(lambda x: np.array([x[0], 1 / 0]))(np.arange(3.0))
    assert np.array is original and np.asarray.__module__ == "numpy"


def test_np_array_bound_before_tracing_says_to_call_np_array():
    from numpy import array
    with pytest.raises(TypeError, match=r"from numpy import array.*call np\.array"):
        on_numpy(lambda x: array([x[0], x[1]]))(np.arange(3.0))


def test_np_array_with_like_copies_and_asarray_does_not():
    def f(x):
        y, z = np.array(x, like=x), np.asarray(x, like=x)
        y[0], z[1] = 5.0, 7.0
        return x, y, np.array([[x[0], 1], [2, x[2]]], like=x), np.asarray([1, 2], like=x)
    x = np.arange(3.0)
    for g, w in zip(on_numpy(f)(x.copy()), f(x.copy())):
        assert_same(g, w)
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        on_numpy(lambda x: np.asarray(x, dtype=np.float32, copy=False, like=x))(x)
