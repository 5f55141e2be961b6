"""NumPy functions and ndarray methods that real model and data code uses and tracing refused:
reductions with where=/initial=, arccosh, logaddexp2, sinc, isposinf/isneginf, the complex
views of real arrays, logspace/geomspace/linspace with traced or array endpoints, rollaxis,
resize, block, unstack, diff(prepend/append), cumulative_sum/prod, maximum/minimum.accumulate,
compress/delete/insert/choose/ravel_multi_index, partition/argpartition/lexsort,
multi_dot/matrix_power, put_along_axis/put/putmask/place, apply_along_axis/apply_over_axes,
piecewise, array_equal/array_equiv, and the methods x.imag, x.take(mode=), x.searchsorted,
x.partition, x.compress, x.choose, x.put, x.device. Each against NumPy eagerly (values, dtypes,
shapes) on the NumPy tier, one compiled batch; and the refusals of data-dependent shapes."""
import warnings

import numpy as np
import pytest

import tracejit

pytestmark = pytest.mark.filterwarnings("ignore::tracejit.RetraceWarning")

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4))
SQ = RNG.standard_normal((4, 4))
I32 = np.array([[3, -1, 2, 7], [0, 5, 5, -2], [1, 2, 3, 4]], np.int32)
NAN = np.array([[1.0, np.nan, 3.0, -2.0], [np.inf, -np.inf, 0.0, -0.0], [2.0, 5.0, -1.0, 4.0]])
F32 = A.astype(np.float32)


def _same(r, e, rtol=1e-6):
    if isinstance(e, (tuple, list)):
        assert isinstance(r, (tuple, list)) and len(r) == len(e)
        for ri, ei in zip(r, e):
            _same(ri, ei, rtol)
        return
    r, e = np.asarray(r), np.asarray(e)
    assert r.dtype == e.dtype, (r.dtype, e.dtype)
    assert r.shape == e.shape, (r.shape, e.shape)
    if e.dtype.kind in "fc":
        np.testing.assert_allclose(r, e, rtol=rtol, atol=1e-12, equal_nan=True)
    else:
        assert np.array_equal(r, e), (r, e)


def _check(f, *args, rtol=1e-6):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = f(*[np.array(a, copy=True) for a in args])
        got = tracejit.jit(f, backend="numpy")(*[np.array(a, copy=True) for a in args])
    _same(got, expected, rtol)


REDUCTIONS = [
    lambda x: np.sum(x, axis=1, where=x > 0),
    lambda x: np.sum(x, initial=10.0),
    lambda x: np.prod(x, axis=0, where=x > 0, keepdims=True),
    lambda x: np.mean(x, axis=1, where=x > 0),
    lambda x: np.mean(x, where=np.array([True, False, True, True])),
    lambda x: np.var(x, axis=1, where=x > -0.5),
    lambda x: np.std(x, axis=0, where=x > -0.5, ddof=1),
    lambda x: np.max(x, axis=1, initial=-5.0, where=x > 0),
    lambda x: np.min(x, initial=5.0, where=x > 0),
    lambda x: np.all(x > 0, axis=1, where=x > -1),
    lambda x: np.any(x > 0, where=x < 0),
    lambda x: x.sum(axis=0, where=x > 0), lambda x: x.sum(initial=1.5),
    lambda x: x.prod(where=x > 0), lambda x: x.mean(axis=1, where=x > 0),
    lambda x: x.var(where=x > 0), lambda x: x.std(axis=1, where=x > 0, keepdims=True),
    lambda x: x.max(axis=0, initial=-10.0, where=x > 0),
    lambda x: x.min(axis=1, initial=10.0, where=x < 0),
    lambda x: (x > 0).all(axis=0, where=x > -1), lambda x: (x > 0).any(where=x < 0),
]


@pytest.mark.parametrize("i", range(len(REDUCTIONS)))
def test_reductions_with_where_and_initial_match_numpy(i):
    _check(REDUCTIONS[i], A)


def test_reductions_with_where_on_ints_nans_and_float32():
    _check(lambda x: np.sum(x, axis=1, where=x > 0), I32)
    _check(lambda x: np.mean(x, axis=0, where=x != 5), I32)
    _check(lambda x: np.nansum(x, where=np.isfinite(x)), NAN)
    _check(lambda x: np.nanmean(x, axis=1, where=x > -1.0), NAN)
    _check(lambda x: x.mean(where=x > 0), F32, rtol=1e-5)
    with pytest.raises(ValueError, match="initial"):
        tracejit.jit(lambda x: np.max(x, where=x > 0), backend="numpy")(A)


def test_new_float_functions_match_numpy():
    big = np.array([1.0, 1.0 + 1e-12, 1.5, 3.0, 1e10, 1e300, np.inf, np.nan])
    _check(np.arccosh, big)
    _check(lambda x: np.arccosh(np.abs(x) + 1), F32, rtol=1e-6)
    _check(lambda x: np.arccosh(x), np.array([1, 2, 10], np.int32))
    _check(lambda x: np.logaddexp2(x, 0.5), A)
    _check(lambda x: np.logaddexp2(x, x), NAN)
    _check(lambda x: np.logaddexp2(x, x[::-1]), NAN)
    _check(lambda x: np.logaddexp2(x, np.float32(1)), F32, rtol=1e-6)
    _check(np.sinc, np.array([0.0, 0.5, -1.5, 2.0, 1e-30]))
    _check(np.sinc, np.array([0, 1, 2], np.int32))
    _check(np.sinc, F32)
    _check(lambda x: (np.isposinf(x), np.isneginf(x)), NAN)
    _check(lambda x: (np.real(x), np.imag(x), x.imag, np.isreal(x), np.iscomplex(x),
                      np.real_if_close(x)), A)
    _check(lambda x: (np.angle(x), np.angle(x, deg=True)), NAN)
    _check(lambda x: (np.maximum(x > 0, x < 1), np.minimum(x > 0, True)), A)


def test_ranges_with_traced_and_array_endpoints():
    pos = np.abs(A) + 0.5
    _check(lambda x: np.logspace(x[0, 0], x[0, 1], 5), A)
    _check(lambda x: np.logspace(0, x[0, 1], 4, base=2.0, endpoint=False), A)
    _check(lambda x: np.geomspace(x[0, 0], x[0, 1], 5), pos)
    _check(lambda x: np.geomspace(-x[0, 0], -x[0, 1], 4, endpoint=False), pos)
    _check(lambda x: np.linspace(x[0], x[1], 3), A)
    _check(lambda x: np.linspace(x[0], x[1], 5, axis=1), A)
    _check(lambda x: np.linspace(0.0, x[:, 0], 4, endpoint=False, axis=-1), A)


def test_layout_functions_match_numpy():
    _check(lambda x: np.rollaxis(x[None], 2), A)
    _check(lambda x: np.rollaxis(x[None], 0, 3), A)
    _check(lambda x: (np.resize(x, (5, 3)), np.resize(x, 2), np.resize(x[:0], 3)), A)
    _check(lambda x: np.block([[x, x[:, :2]], [x[:1], x[:1, :2]]]), A)
    _check(lambda x: np.block([x[0], 1.0, x[1]]), A)
    _check(lambda x: np.unstack(x, axis=1), A)
    _check(lambda x: np.diff(x, n=2, axis=1, prepend=0.0, append=x[:, -1:]), A)
    _check(lambda x: np.diff(x, prepend=x[:, :1]), I32)
    _check(lambda x: np.diff(x, n=0, prepend=1), I32)
    _check(lambda x: (np.cumulative_sum(x, axis=1, include_initial=True),
                      np.cumulative_prod(x[0]), np.cumulative_sum(x, axis=0, dtype=np.int64)), I32)
    _check(lambda x: (np.maximum.accumulate(x, axis=1), np.minimum.accumulate(x),
                      np.maximum.accumulate(x, axis=0)), NAN)
    _check(lambda x: np.maximum.accumulate(np.tile(x, 3), axis=1), I32)


def test_constant_position_takes_match_numpy():
    _check(lambda x: (np.compress([True, False, True], x, axis=0),
                      np.compress([False, True], x), x.compress([1, 0, 1, 1], axis=1)), A)
    _check(lambda x: (np.delete(x, [0, 2], axis=1), np.delete(x, 1), np.delete(x, slice(0, 2), 0),
                      np.delete(x, -1, axis=1)), A)
    _check(lambda x: (np.insert(x, 1, 0.0, axis=1), np.insert(x, [0, 2], [9.0, 8.0], axis=1),
                      np.insert(x, 3, x[0], axis=0), np.insert(x, 2, 5), np.insert(x, 1, 7, 1)),
           I32)
    _check(lambda x: np.insert(x, 1, x[:, 0], axis=1), A)
    idx = np.array([[0, 1, 2, 1], [2, 2, 0, 1], [1, 0, 0, 2]])
    _check(lambda x: (np.choose(idx, [x, -x, 2 * x]), np.choose(idx + 1, [x, 1.0, x], mode="clip"),
                      np.choose(idx - 1, [x, 0.5, -x], mode="wrap"), idx.choose([1, 2, 3])), A)
    _check(lambda i: (np.ravel_multi_index((i, i[::-1]), (8, 9)),
                      np.ravel_multi_index((i, i), (3, 4), mode="clip", order="F")),
           np.array([0, 3, 1, 5, 2]))


def test_partial_and_multi_key_sorts():
    def f(x):
        p = np.partition(x, 2, axis=1)
        ap = np.argpartition(x, (1, 2), axis=0)
        y = x.copy()
        y.partition(1)
        return p[:, 2], np.take_along_axis(x, ap, 0)[1:3], y[:, 1], x.argpartition(0)[:, :0]
    _check(f, A)
    r = tracejit.jit(lambda x: np.partition(x, 1, axis=None), backend="numpy")(A)
    assert r[1] == np.sort(A, axis=None)[1] and (r[:1] <= r[1]).all() and (r[2:] >= r[1]).all()
    keys = np.array([[1, 0, 1, 0, 2], [3, 3, 1, 1, 0]])
    _check(lambda k: (np.lexsort((k[0], k[1])), np.lexsort(k), np.lexsort((k[0],))), keys)
    _check(lambda k: np.lexsort((k, k[::-1]), axis=0), SQ)


def test_multi_dot_and_matrix_power():
    b = RNG.standard_normal((4, 5))
    _check(lambda x, y: np.linalg.multi_dot([x, y, y.T]), A, b)
    _check(lambda x, y: np.linalg.multi_dot([x[0], y, y[0]]), A, b)
    _check(lambda x, y: np.linalg.multi_dot([x, y, y[0]]), A, b)
    _check(lambda x: [np.linalg.matrix_power(x, n) for n in (0, 1, 2, 3, 5)], SQ, rtol=1e-10)
    _check(lambda x: np.linalg.matrix_power(x, -2), SQ + 4 * np.eye(4), rtol=1e-9)
    _check(lambda x: np.linalg.matrix_power(x, 3), I32[:3, :3])
    _check(lambda x: np.linalg.matrix_power(np.stack([x, x.T]), 2), SQ, rtol=1e-10)


def test_writes_at_positions_match_numpy():
    def f(x):
        a, b, c, d, e = (x.copy() for _ in range(5))
        np.put_along_axis(a, np.argmax(a, 1, keepdims=True), 0.0, 1)
        np.put_along_axis(b, np.argsort(b, 0)[:1], [[1.0, 2.0, 3.0, 4.0]], 0)
        np.put(c, [0, 5, -1], [1.0, 2.0])
        np.put(d, [1, 30], 9.0, mode="clip")
        d.put([2], -7.0)
        np.putmask(e, e > 0, [10.0, 20.0, 30.0])
        g = x.copy()
        np.place(g, g < 0, [-1.0, -2.0])
        return a, b, c, d, e, g
    _check(f, A)
    _check(lambda x: (np.putmask(x, x > 2, -x), x)[1], I32.copy())


def test_apply_along_axis_over_axes_and_piecewise():
    _check(lambda x: np.apply_along_axis(lambda r: r.sum() * 2, 1, x), A)
    _check(lambda x: np.apply_along_axis(lambda r: r[::-1] * r[0], 0, x), A)
    _check(lambda x: np.apply_along_axis(lambda r: np.outer(r, r[:2]), 1, x), A)
    _check(lambda x: np.apply_over_axes(np.sum, x, [0, 1]), A)
    _check(lambda x: np.apply_over_axes(np.mean, x[None], (0, 2)), A)
    _check(lambda x: np.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t * 2]), A)
    _check(lambda x: np.piecewise(x, [x < -0.5, x > 0.5], [0.0, 1.0, lambda t: t]), A)
    _check(lambda x: np.piecewise(x, [x < 2], [lambda t: t * 3.7]), I32)


def test_comparisons_dtype_queries_and_methods():
    _check(lambda x: (np.array_equal(x, x), np.array_equal(x, x + 1), np.array_equal(x, x[0]),
                      np.array_equiv(x, x[0]), np.array_equiv(x[:1], x[:1]),
                      np.array_equiv(x, x[:2])), A)
    _check(lambda x: np.array_equal(x, x, equal_nan=True), NAN)
    _check(lambda x: (x.astype(np.common_type(x)), x.astype(np.common_type(x, F32))), I32)
    _check(lambda x: (x.take([0, 20], mode="clip"), x.take([-1, 13], axis=None, mode="wrap"),
                      np.sort(x.ravel()).searchsorted(x[0], side="right")), A)
    _check(lambda x: (x.to_device("cpu") * 2, x.device == "cpu"), A)


@pytest.mark.parametrize("call, hint", [
    (lambda x: np.nonzero(x), "np.where"), (lambda x: np.argwhere(x), "np.where"),
    (lambda x: np.flatnonzero(x), "np.where"), (lambda x: np.extract(x > 0, x), "where="),
    (lambda x: np.unique(x), "np.sort"), (lambda x: np.trim_zeros(x[0]), "constant bounds"),
    (lambda x: np.linalg.lstsq(x, x[:, 0]), "pinv"), (lambda x: np.polyfit(x[0], x[1], 1), "pinv"),
    (lambda x: np.compress(x[0] > 0, x, axis=1), "constant"),
    (lambda x: np.delete(x, np.argmax(x[0]), axis=1), "constant"),
    (lambda x: x.strides, "x.shape"),
])
def test_data_dependent_shapes_stay_refused_naming_the_line(call, hint):
    with pytest.raises(Exception) as info:
        tracejit.jit(call, backend="numpy")(A)
    text = str(info.value)
    assert "test_numpy_coverage_found_gaps.py" in text and hint in text, text


def test_the_new_functions_compiled_give_numpys_results():
    def f(x, k):
        return (np.sum(x, axis=1, where=x > 0), x.mean(where=x > 0),
                np.max(x, axis=0, initial=-9.0, where=x < 1), np.arccosh(np.abs(x) + 1),
                np.logaddexp2(x, x[::-1]), np.sinc(x), np.isposinf(x / 0.0),
                np.logspace(x[0, 0], x[0, 1], 4), np.geomspace(1.0, np.abs(x[0, 0]) + 2, 3),
                np.linspace(x[0], x[1], 3, axis=1), np.rollaxis(x[None], 2),
                np.resize(x, (5, 2)), np.block([[x, x]]), np.diff(x, prepend=0.0),
                np.maximum.accumulate(x, axis=1), np.cumulative_sum(x, axis=0),
                np.compress([True, False, True], x, axis=0), np.delete(x, 1, axis=1),
                np.insert(x, 2, 0.5, axis=1), np.choose(k, [x, -x]),
                np.partition(x, 1, axis=1)[:, 1], np.lexsort((x[0], x[1])),
                np.linalg.multi_dot([x, x.T, x]), np.linalg.matrix_power(x[:, :3], 3),
                np.apply_along_axis(np.sum, 1, x), np.piecewise(x, [x < 0], [0.0, lambda t: t]),
                np.array_equal(x, x), x.take([0, 99], mode="clip"))
    k = (A > 0).astype(np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = f(A, k)
        got = tracejit.jit(f, tiered=False)(A, k)      # compiled code, no NumPy tier
    _same(got, expected, rtol=1e-9)


def test_take_of_a_numpy_array_at_traced_indices_is_a_traced_gather():
    # NumPy dispatches np.take on its first argument only: traced indices into a NumPy array
    # made in the function were converted with __array__ and refused with a wrong hint
    def f(t, x):
        table = np.array([1.0, 2.0, 3.0])
        return np.take(table, t) * x + np.take(np.arange(6.0).reshape(2, 3), t, axis=1).sum(0)
    t, x = np.array([0, 2, 1]), np.ones(3)
    np.testing.assert_array_equal(tracejit.jit(f)(t, x), f(t, x))
    np.testing.assert_array_equal(tracejit.jit(f, backend="numba", tiered=False)(t, x), f(t, x))
