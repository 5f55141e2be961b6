"""NumPy functions added under tracing (nan-reductions, searchsorted/digitize/interp, kron,
correlate, vander, polyval, shifts, heaviside, signbit, cbrt, modf, fix, ldexp, frexp,
trapezoid, ediff1d, bincount, isin, meshgrid, allclose, tri*_indices_from): each against
NumPy eagerly, values, dtypes and shapes, on edge cases (empty, size 1, NaN, negative, ints,
float32); a few gradients against central differences."""
import warnings

import numpy as np
import pytest

import tracejit
from gradcheck import check_grad

RNG = np.random.default_rng(0)
pytestmark = pytest.mark.filterwarnings("ignore::tracejit.RetraceWarning")


def _jit(f):
    """The NumPy tier (every jitted function's first calls): the same IR as compiled code, so
    the semantics of each composition are checked here at no compile cost; compiled kernels
    run the new functions in test_the_new_functions_compiled_give_the_numpy_tiers_results."""
    return tracejit.jit(f, backend="numpy")


def _same(r, e, exact=False, rtol=1e-6):
    """Values (NaN equal; exact or within a few ulps), dtype and shape as NumPy's."""
    if isinstance(e, tuple):
        assert isinstance(r, tuple) and len(r) == len(e)
        for ri, ei in zip(r, e):
            _same(ri, ei, exact, rtol)
        return
    r, e = np.asarray(r), np.asarray(e)
    assert r.dtype == e.dtype, (r.dtype, e.dtype)
    assert r.shape == e.shape, (r.shape, e.shape)
    if exact or e.dtype.kind in "biu":
        assert np.array_equal(r, e, equal_nan=e.dtype.kind == "f"), (r, e)
        if e.dtype.kind == "f":
            assert np.array_equal(np.signbit(r), np.signbit(e))
    else:
        np.testing.assert_allclose(r, e, rtol=rtol, atol=0, equal_nan=True)


def _eager(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args)


_NAN_INPUTS = [
    np.array([[1.0, np.nan, 3.0, 2.0], [np.nan] * 4, [4.0, -5.0, np.nan, 7.0]]),
    np.array([[1.5, np.nan], [-2.0, 0.25]], np.float32),
    np.array([[3, -1, 2], [0, 5, 5]], np.int32),
    np.array([[np.nan]]),
    np.zeros((2, 0)),
]

_NAN_REDUCTIONS = {
    "nansum": np.nansum, "nanprod": np.nanprod, "nanmean": np.nanmean,
    "nanvar": np.nanvar, "nanstd": np.nanstd, "nanmax": np.nanmax, "nanmin": np.nanmin,
    "nancumsum": np.nancumsum, "nancumprod": np.nancumprod, "nanmedian": np.nanmedian,
    "nanquantile": lambda a, axis: np.nanquantile(a, [0.1, 0.5, 0.9], axis=axis),
    "nanpercentile": lambda a, axis: np.nanpercentile(a, 30, axis=axis),
    "nanvar_ddof1": lambda a, axis: np.nanvar(a, axis=axis, ddof=1),
    "nanmean_keepdims": lambda a, axis: np.nanmean(a, axis=axis, keepdims=True),
    "nanargmax": np.nanargmax, "nanargmin": np.nanargmin,
}


@pytest.mark.parametrize("name", sorted(_NAN_REDUCTIONS))
def test_nan_reductions(name):
    f = _NAN_REDUCTIONS[name]
    for axis in (None, 0, 1):
        jf = _jit(lambda a: f(a, axis=axis))
        for a in _NAN_INPUTS:
            try:
                e = _eager(f, a, axis)
            except ValueError:          # empty reductions (nanmax, nanargmax, ...)
                with pytest.raises((ValueError, IndexError)):
                    jf(a)
                continue
            _same(jf(a), e, rtol=1e-5 if a.dtype == np.float32 else 1e-12)


def test_nanargmax_all_nan_slice_raises_when_run():
    jf = _jit(lambda a: np.nanargmax(a, axis=1))
    _same(jf(np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, 1.0]])), np.array([2, 1]))
    with pytest.raises(IndexError):
        jf(np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]]))


def test_nan_reduction_gradients():
    x = np.array([[1.0, np.nan, 3.0, 2.0], [0.5, -1.5, np.nan, 4.0]])
    for f in (lambda a: np.nansum(a, axis=1) ** 2, lambda a: np.nanmean(a, axis=0),
              lambda a: np.nanstd(a, axis=1), lambda a: np.nanmax(a, axis=1)):
        check_grad(lambda a: np.nan_to_num(f(a)), x)


# -- searching sorted arrays --------------------------------------------------------------------

_SORTED = np.array([1.0, 2.0, 2.0, 4.0, 8.0, np.nan])
_KEYS = [np.array([0.0, 1.0, 2.0, 3.0, 8.0, 9.0, np.nan, -np.inf]), np.array(2.0),
         np.zeros(0), np.array([[1.5, 7.0], [2.0, -3.0]], np.float32)]


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(side):
    jf = _jit(lambda a, v: np.searchsorted(a, v, side=side))
    for a in (_SORTED, _SORTED[:1], _SORTED[:5], np.zeros(0)):
        for v in _KEYS:
            _same(jf(a, v), np.searchsorted(a, v, side=side))
    ints = np.array([-5, 0, 0, 3, 9])
    _same(jf(ints, np.array([-6, 0, 3, 10, 1])), np.searchsorted(ints, [-6, 0, 3, 10, 1],
                                                                 side=side))
    order = np.array([3, 0, 4, 1, 2])
    shuffled = np.array([4.0, 8.0, 9.0, 1.0, 6.0])
    js = _jit(lambda a, v: np.searchsorted(a, v, side=side, sorter=order))
    _same(js(shuffled, _KEYS[0]), np.searchsorted(shuffled, _KEYS[0], side=side,
                                                   sorter=order))


def test_digitize():
    x = _KEYS[0]
    inc, dec = _SORTED[:5], _SORTED[4::-1]
    for right in (False, True):
        _same(_jit(lambda x: np.digitize(x, inc, right=right))(x), np.digitize(x, inc, right))
        _same(_jit(lambda x: np.digitize(x, dec, right=right))(x), np.digitize(x, dec, right))
        jt = _jit(lambda x, b: np.digitize(x, b, right=right))      # traced bins
        for b in (inc, dec, inc[:1]):
            _same(jt(x, b), np.digitize(x, b, right))
    _same(_jit(lambda x: np.digitize(x, [0, 5, 10]))(np.array([-1, 5, 12, 3])),
          np.digitize(np.array([-1, 5, 12, 3]), [0, 5, 10]))


def test_interp():
    xp = np.array([0.0, 1.0, 1.0, 3.0, 4.0])
    fp = np.array([0.0, 2.0, 3.0, -1.0, 5.0])
    x = np.concatenate([np.linspace(-1, 5, 13), [np.nan, 1.0, 4.0, 0.0]])
    for kw in ({}, {"left": -7.0, "right": 9.0}, {"period": 3.5}):
        jf = _jit(lambda x, xp, fp: np.interp(x, xp, fp, **kw))
        _same(jf(x, xp, fp), np.interp(x, xp, fp, **kw), rtol=1e-14)
        _same(jf(x.astype(np.float32), xp[:1], fp[:1].astype(np.float32)),
              np.interp(x.astype(np.float32), xp[:1], fp[:1].astype(np.float32), **kw))
    _same(_jit(lambda v: np.interp(v, [1, 2, 3], [3, 2, 0]))(np.array([0, 2, 5])),
          np.interp(np.array([0, 2, 5]), [1, 2, 3], [3, 2, 0]))
    _same(_jit(lambda v: np.interp(v, xp, fp))(np.float64(2.5)), np.interp(2.5, xp, fp))
    check_grad(lambda x, fp: np.interp(x, xp, fp), np.array([0.3, 1.7, 2.2, 3.9]), fp)


def test_isin():
    for invert in (False, True):
        jf = _jit(lambda a: np.isin(a, [3, 7, -1], invert=invert))
        for a in (np.array([3, -5, 12, 7, 0, -1]), np.zeros((2, 0), np.int32),
                  np.array([[7.0, np.nan], [3.0, 3.5]]), np.array(7)):
            _same(jf(a), np.isin(a, [3, 7, -1], invert=invert))
    _same(_jit(lambda a, t: np.isin(a, t))(np.array([1.0, np.nan]), np.array([np.nan, 1.0])),
          np.isin([1.0, np.nan], [np.nan, 1.0]))


# -- linear algebra and polynomials --------------------------------------------------------------

def test_kron():
    a = np.arange(6.0).reshape(2, 3)
    b = np.array([[1, -2], [3, 4]], np.int32)
    jf = _jit(np.kron)
    for x, y in [(a, b), (b, b), (np.arange(3), b), (a, np.float32(2)),
                 (np.arange(3.0, dtype=np.float32), np.arange(2, dtype=np.int8)),
                 (np.zeros((0, 2)), b), (np.ones(1), np.ones((1, 1, 2)))]:
        _same(jf(x, y), np.kron(x, y), exact=True)
    check_grad(np.kron, a, RNG.standard_normal((2, 2)))


@pytest.mark.parametrize("mode", ["valid", "same", "full"])
def test_correlate(mode):
    jf = _jit(lambda x, y: np.correlate(x, y, mode))
    for n1, n2 in [(5, 3), (3, 5), (4, 4), (1, 3), (5, 1), (1, 1)]:
        x = np.arange(n1) * 1.5 - 2
        y = np.arange(n2) ** 2 - 1.0
        _same(jf(x, y), np.correlate(x, y, mode), rtol=1e-12)
        _same(jf(x.astype(np.int32), y.astype(np.int32)),
              np.correlate(x.astype(np.int32), y.astype(np.int32), mode))
    with pytest.raises(ValueError):
        jf(np.zeros(0), np.ones(2))


def test_vander():
    for x in (np.array([1, 2, -3]), np.array([1.5, 2, 0.5], np.float32), np.zeros(0),
              np.array([2.0]), np.array([True, False])):
        for N in (None, 0, 1, 4):
            for inc in (False, True):
                _same(_jit(lambda x: np.vander(x, N, inc))(x), np.vander(x, N, inc), exact=True)


def test_polyval():
    p = np.array([3.0, -2.0, 0.5])
    jx = _jit(lambda x: np.polyval(p, x))
    jp = _jit(lambda c, x: np.polyval(c, x))
    for x in (np.array([1.5, 2.0, -1.0]), np.array([1, 2], np.int32),
              np.array([1.5, 2], np.float32), np.zeros(0), np.float64(2.0)):
        _same(jx(x), np.polyval(p, x), exact=True)
        _same(jp(np.array([2, -1, 4]), x), np.polyval(np.array([2, -1, 4]), x), exact=True)
        _same(jp(p[:1], x), np.polyval(p[:1], x), exact=True)
    check_grad(lambda c, x: np.polyval(c, x), p, np.array([0.5, -1.25, 2.0]))


def test_triangle_indices_from():
    m = np.arange(12.0).reshape(3, 4)
    for k in (-1, 0, 2):
        _same(_jit(lambda m: m[np.triu_indices_from(m, k)])(m), m[np.triu_indices_from(m, k)])
        _same(_jit(lambda m: m[np.tril_indices_from(m, k)])(m), m[np.tril_indices_from(m, k)])


# -- integer bits and float functions -----------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_shifts(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, 3, info.max, info.min, info.max // 3], dtype)
    if info.min < 0:
        x[1] = -7
    b = info.bits
    k = np.array([0, 1, b - 1, b, 2, b + 3] if info.min == 0 else [0, 1, b - 1, b, -1, 3],
                 dtype)
    jf = _jit(lambda x, k: (np.left_shift(x, k), np.right_shift(x, k), x << 2, x >> 1,
                            3 << x[:1] * 0))
    _same(jf(x, k), (np.left_shift(x, k), np.right_shift(x, k), x << 2, x >> 1, 3 << x[:1] * 0))


def test_shift_operators_and_in_place():
    def f(x, b):
        x <<= 1
        y = x.copy()
        y >>= 2
        return x, y, 1 << x, b << 1
    x = np.arange(-3, 4)
    _same(_jit(f)(x.copy(), np.array([True, False])),
          f(x.copy(), np.array([True, False])))
    with pytest.raises(TypeError):
        _jit(lambda x: x << 1)(np.ones(2))


_FLOATS = np.concatenate([
    RNG.standard_normal(12) * 10.0 ** RNG.integers(-300, 300, 12),
    [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -2.2e-308, 1.7e308, 8.0, -27.0, 0.5, 1.0,
     -3.5, 2.0]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.int8])
def test_float_functions(dtype):
    with np.errstate(all="ignore"):
        x = _FLOATS.astype(dtype)
    n = RNG.integers(-1200, 1200, x.size)
    jf = _jit(lambda x, n: (np.modf(x), np.frexp(x), np.ldexp(x, n), np.signbit(x),
                            np.heaviside(x, 0.5), np.fix(x)))
    with np.errstate(all="ignore"):
        e = (np.modf(x), np.frexp(x), np.ldexp(x, n), np.signbit(x), np.heaviside(x, 0.5),
             np.fix(x))
    _same(jf(x, n), e, exact=True)
    r, e = _jit(np.cbrt)(x), np.cbrt(x)
    assert r.dtype == e.dtype and np.array_equal(np.isnan(r), np.isnan(e))
    finite = np.isfinite(e)
    assert np.array_equal(r[~finite], e[~finite], equal_nan=True)
    ulp = np.spacing(np.abs(e[finite]))
    assert (np.abs(r[finite] - e[finite]) <= 2 * ulp).all()
    assert np.array_equal(np.signbit(r), np.signbit(e))


def test_ldexp_into_subnormals_and_beyond():
    m = RNG.standard_normal(200)
    n = RNG.integers(-1160, -1000, 200)
    jf = _jit(np.ldexp)
    _same(jf(m, n), np.ldexp(m, n), exact=True)
    _same(jf(m.astype(np.float32), n), np.ldexp(m.astype(np.float32), n), exact=True)
    big = np.array([5e-324, 1e-300, 1.0, 2.0])
    with np.errstate(over="ignore"):
        e = np.ldexp(big, [2000, 2000, 1023, 1023])
    _same(jf(big, np.array([2000, 2000, 1023, 1023])), e)


def test_float_function_gradients():
    x = np.array([0.7, -2.5, 3.3, 8.2])
    check_grad(np.cbrt, x)
    check_grad(lambda x: np.modf(x)[0] + np.ldexp(x, 3), x)


def test_allclose_and_isclose():
    jf = _jit(lambda a, b: (np.allclose(a, b), np.isclose(a, b, equal_nan=True)))
    for a, b in [(np.ones(3), np.ones(3) + 1e-9), (np.array([1.0, np.nan]),
                                                    np.array([1.0, np.nan])),
                 (np.zeros(0), np.zeros(0)), (np.array([1, 2]), np.array([1, 3]))]:
        r = jf(a, b)
        assert bool(r[0]) == np.allclose(a, b)
        _same(r[1], np.isclose(a, b, equal_nan=True))


# -- differences, counts, grids ------------------------------------------------------------------

def test_trapezoid():
    jf = _jit(lambda y: np.trapezoid(y))
    jx = _jit(lambda y, x: np.trapezoid(y, x, axis=0))
    jdx = _jit(lambda y: np.trapezoid(y, dx=np.float32(0.5), axis=0))
    for y in (np.array([1.0, 2.5, -3.0, 4.0]), np.arange(6, dtype=np.int32).reshape(2, 3),
              np.ones(1), np.zeros(0), np.array([[1.5, np.nan], [2.0, 1.0]], np.float32)):
        _same(jf(y), np.trapezoid(y), rtol=1e-12)
        _same(jdx(y), np.trapezoid(y, dx=np.float32(0.5), axis=0), rtol=1e-6)
        x = np.cumsum(np.arange(1.0, y.shape[0] + 1))
        _same(jx(y, x), np.trapezoid(y, x, axis=0), rtol=1e-12)
    check_grad(lambda y, x: np.trapezoid(y, x), np.array([1.0, 2.5, -3.0]),
               np.array([0.0, 0.5, 2.0]))


def test_ediff1d():
    for a in (np.array([1, 4, 9, -16]), np.array([[1.5, 2.0], [0.5, 8.0]], np.float32),
              np.ones(1), np.zeros(0)):
        _same(_jit(np.ediff1d)(a), np.ediff1d(a))
        f = lambda a: np.ediff1d(a, to_end=[7, 8], to_begin=-1)      # noqa: E731
        _same(_jit(f)(a), f(a))
    with pytest.raises(TypeError):
        _jit(lambda a: np.ediff1d(a, to_begin=0.5))(np.arange(3))


def test_bincount():
    jf = _jit(lambda x: np.bincount(x, minlength=6))
    jw = _jit(lambda x, w: np.bincount(x, w, minlength=5))
    for x in (np.array([0, 1, 1, 3, 5, 0]), np.zeros(0, np.int64), np.array([2], np.int32),
              np.array([4, 4, 4], np.uint8)):
        _same(jf(x), np.bincount(x, minlength=6))
        if x.max(initial=0) < 5:
            w = RNG.standard_normal(x.size).astype(np.float32)
            _same(jw(x, w), np.bincount(x, w, minlength=5))
    with pytest.raises(IndexError):
        jf(np.array([1, 6]))                   # beyond minlength: NumPy's would grow
    with pytest.raises(IndexError):
        jf(np.array([1, -1]))
    # constant values, traced weights: NumPy's length
    _same(_jit(lambda w: np.bincount(np.array([0, 3, 3]), w))(np.array([0.5, 1.0, 2.0])),
          np.bincount(np.array([0, 3, 3]), np.array([0.5, 1.0, 2.0])))
    with pytest.raises(tracejit.UnsupportedError if hasattr(tracejit, "UnsupportedError")
                       else Exception):
        _jit(np.bincount)(np.array([1, 2]))


def test_meshgrid():
    x, y, z = np.arange(3.0), np.array([1, 2], np.int32), np.ones((2, 2), np.float32)
    for kw in ({}, {"indexing": "ij"}, {"sparse": True}, {"sparse": True, "indexing": "ij"}):
        _same(_jit(lambda x, y, z: np.meshgrid(x, y, z, **kw))(x, y, z),
              np.meshgrid(x, y, z, **kw), exact=True)
        _same(_jit(lambda x: np.meshgrid(x, **kw))(x), np.meshgrid(x, **kw), exact=True)


def test_the_new_functions_compiled_give_the_numpy_tiers_results():
    x = np.array([[1.0, np.nan, 3.0, 2.0, -0.5], [0.5, -1.5, np.nan, 4.0, 2.5]])
    bins = np.array([-1.0, 0.0, 1.0, 2.5, 4.0])

    def f(a, b):
        clean = np.nan_to_num(a)
        return (np.nansum(a, axis=1), np.nanmean(a, axis=0), np.nanstd(a), np.nanmax(a, axis=1),
                np.nanargmin(a, axis=1), np.nanmedian(a, axis=1), np.nanquantile(a, 0.3),
                np.searchsorted(b, clean[0]), np.digitize(clean[1], b), np.interp(clean, b, b ** 2),
                np.isin(clean, b), np.kron(clean[:, :2], b[:2]), np.correlate(clean[0], b, "same"),
                np.polyval(b[:3], clean), np.trapezoid(clean, axis=1), np.ediff1d(clean),
                np.cbrt(clean), np.ldexp(clean, 3), np.signbit(clean), np.heaviside(clean, 0.5),
                np.modf(clean)[0], np.vander(b[:3], 3), np.left_shift(np.arange(5), 2))
    args = (x, bins)
    compiled, tier = tracejit.jit(f, tiered=False)(*args), _jit(f)(*args)
    for c, t, e in zip(compiled, tier, f(*args)):
        _same(c, e, rtol=1e-12)
        _same(t, e, rtol=1e-12)
