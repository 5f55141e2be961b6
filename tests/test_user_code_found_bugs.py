"""Gaps found by jitting plain NumPy code written as users write it (cs231n layers, numpy-ml,
scientific kernels): each test pins NumPy's behaviour where tracejit refused or differed."""
import numpy as np
import pytest

import tracejit

RNG = np.random.default_rng(0)


def _jit(f):
    return tracejit.jit(f, tiered=False)


# -- x[..., mask] = v with a traced mask (a causal mask made with np.ones under the trace) -----

def _causal_fill(att):
    T = att.shape[-1]
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)
    att[..., mask] = -np.inf
    return att


def _fill_columns(att, m):
    att[:, m] = 0
    return att


def _fill_middle(att, m):
    att[..., m, :] = 7
    return att


@pytest.mark.parametrize("fn,mask_of", [(_causal_fill, None),
                                        (_fill_columns, lambda a: a[0] > 0),
                                        (_fill_middle, lambda a: a[0, :, 0] > 0)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_masked_assignment_after_full_slices_matches_numpy(fn, mask_of, dtype):
    a = RNG.standard_normal((2, 3, 3)).astype(dtype)
    args = (a,) if mask_of is None else (a, mask_of(a))
    want = fn(*[x.copy() for x in args])
    got = _jit(fn)(*[x.copy() for x in args])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_masked_assignment_after_an_integer_index_is_still_refused():
    def f(a, m):
        a[0, m] = 0
        return a
    with pytest.raises(tracejit.UnsupportedError, match="boolean mask combined"):
        _jit(f)(np.ones((2, 3)), np.ones(3) > 0)


# -- NumPy functions such code calls that were refused ------------------------------------------

def _assert_same(got, want, rtol=1e-12):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, type(want)) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w, rtol)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12 if want.dtype.kind == "f"
                               and want.dtype.itemsize == 8 else 1e-6)


@pytest.mark.parametrize("order", ["C", "F"])
def test_unravel_index_of_an_argmax_matches_numpy(order):
    x = RNG.standard_normal((2, 3, 4))

    def f(x):     # cs231n's max-pool backward: where the window's maximum is
        return (np.unravel_index(np.argmax(x), x.shape, order=order),
                np.unravel_index(np.argsort(x.ravel())[:5].astype(np.int32), (4, 6), order),
                np.unravel_index(x.argmax(), 24))
    _assert_same(_jit(f)(x), f(x))


def test_repeat_with_constant_counts_per_element_matches_numpy():
    x = RNG.standard_normal((2, 3, 4))

    def f(x):
        return (np.repeat(x, [1, 2, 0], axis=1), x.repeat([2], axis=2),
                np.repeat(x, np.array([1, 0, 2, 1]), axis=-1), np.repeat(x[0, 0], [0, 1, 2, 3]))
    _assert_same(_jit(f)(x), f(x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_median_quantile_and_percentile_match_numpy(dtype):
    x = (RNG.standard_normal((4, 5)) * 5).astype(dtype)

    def f(a):
        return (np.median(a), np.median(a, axis=0), np.median(a, axis=1, keepdims=True),
                np.median(a[:3], axis=(0, 1)), np.quantile(a, 0.3),
                np.quantile(a, [0.1, 0.5, 0.9], axis=0),
                np.percentile(a, 75, axis=1, keepdims=True),
                np.subtract(*np.percentile(a, [75, 25], axis=0)))
    _assert_same(_jit(f)(x), f(x), rtol=1e-6)


def test_median_and_quantile_are_nan_where_a_slice_holds_nan():
    x = RNG.standard_normal((4, 5))
    x[1, 2] = np.nan

    def f(a):
        return np.median(a, axis=0), np.median(a, axis=1), np.quantile(a, 0.5, axis=0)
    _assert_same(_jit(f)(x), f(x))


def test_quantile_with_a_traced_q_matches_numpy():
    x = RNG.standard_normal((4, 5))
    q = np.array([0.0, 0.3, 0.5, 1.0])

    def f(a, q):
        return np.quantile(a, q), np.quantile(a, q, axis=0), np.percentile(a, q * 100, axis=1)
    _assert_same(_jit(f)(x, q), f(x, q))


def test_median_and_quantile_gradients_pick_the_middle_values():
    x = RNG.standard_normal((5, 4))
    g = tracejit.grad(lambda a: np.median(a, axis=0).sum())(x)
    want = np.zeros_like(x)
    want[np.argsort(x, axis=0)[2], np.arange(4)] = 1
    np.testing.assert_array_equal(g, want)
    g = tracejit.grad(lambda a: np.quantile(a[:4], 0.5))(x)       # halfway between two
    assert g.sum() == pytest.approx(1.0) and np.count_nonzero(g) == 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_cov_and_corrcoef_match_numpy(dtype):
    x = (RNG.standard_normal((5, 3)) * 4).astype(dtype)

    def f(a):
        return (np.cov(a), np.cov(a, rowvar=False), np.cov(a[:, 0], a[:, 1]), np.cov(a[:, 0]),
                np.cov(a, bias=True), np.cov(a.T, ddof=0),
                np.corrcoef(a, rowvar=False), np.corrcoef(a[:, 0], a[:, 1]))
    _assert_same(_jit(f)(x), f(x), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_matches_numpy(dtype, mode):
    x = (RNG.standard_normal((5, 3)) * 4).astype(dtype)

    def f(a):       # a moving average, and kernels of both parities, longer than the signal
        return tuple(np.convolve(a[:, 0], k, mode)
                     for k in (np.ones(3) / 3, a[:2, 1], a[0], np.array([1, -1]), a[:, 2]))
    _assert_same(_jit(f)(x), f(x), rtol=1e-5)


def test_convolve_gradient_matches_central_differences():
    a, k = RNG.standard_normal(6), RNG.standard_normal(3)

    def loss(a, k):
        return (np.convolve(a, k, "same") ** 2).sum()
    ga, gk = tracejit.grad(loss, argnums=(0, 1))(a, k)
    eps = 1e-6
    for g, i in ((ga, 0), (gk, 1)):
        args = [a, k]
        num = []
        for j in range(args[i].size):
            d = np.zeros_like(args[i])
            d[j] = eps
            up, dn = list(args), list(args)
            up[i], dn[i] = args[i] + d, args[i] - d
            num.append((loss(*up) - loss(*dn)) / (2 * eps))
        np.testing.assert_allclose(g, num, rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_cross_matches_numpy(dtype):
    x = (RNG.standard_normal((4, 3)) * 4).astype(dtype)

    def f(a):
        return (np.cross(a, a[::-1]), np.cross(a[0], a[1]), np.cross(a[:, :2], a[:, 1:]),
                np.cross(a.T, a.T[:, ::-1], axis=0), np.cross(a[:3], a[0], axisc=0))
    _assert_same(_jit(f)(x), f(x), rtol=1e-6)


def test_diagflat_hsplit_vsplit_dsplit_and_average_returned_match_numpy():
    x = RNG.standard_normal((4, 3))
    w = RNG.random(4)

    def f(a, w):
        return (np.diagflat(a), np.diagflat(a[0], 1), np.diagflat(a[:, 0], -2),
                np.hsplit(a, 3), np.vsplit(a, [1, 3]), np.hsplit(a[0], 3),
                np.dsplit(np.stack([a, a], axis=2), 2),
                np.average(a, axis=0, weights=w, returned=True), np.average(a, returned=True),
                np.average(a, axis=1, returned=True))
    _assert_same(_jit(f)(x, w), f(x, w))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_quantiles_interpolate_as_numpys_lerp_bit_for_bit(dtype):
    """A float32 quantile was 10 ulp off NumPy's in one CI run (a + (b - a) t, where NumPy's
    _lerp takes b - (b - a)(1 - t) above t = 0.5, and widens after b - a)."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 9)) * 5).astype(dtype)
    x[2, 3] = np.nan

    def f(a):
        return (np.quantile(a[:4], 0.3, axis=1), np.quantile(a[:4], [0.1, 0.7], axis=0),
                np.percentile(a[3:], 62.5), np.nanquantile(a, 0.3, axis=1),
                np.nanpercentile(a, [10, 90], axis=0), np.nanmedian(a, axis=1))
    for got, want in zip(_jit(f)(x), f(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
