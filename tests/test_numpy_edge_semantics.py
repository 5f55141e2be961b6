"""Edge semantics that NumPy 2 pins down and a tracer easily gets wrong: np.round of integer
arrays and with negative decimals, the exponents NumPy computes with other functions than pow
(``x ** 0.5`` is sqrt), Python ints out of an integer array's range written into it, and the
array methods that alias or refuse (x.view(), x.astype(copy=False), x.shape = ..., x << k).

Results are compared with NumPy exactly (dtype, values, the sign of zeros) on every tier: the
default tiered mode (its first call, then compiled), untiered, and the NumPy tier alone.
"""
from __future__ import annotations

import os
import platform

import numpy as np
import pytest

import tracejit
from tracejit import UnsupportedError

HERE = os.path.basename(__file__)


def on_every_tier(fn, *args):
    """fn jitted in the default tiered mode (its first call, then once compiled), untiered,
    and on the NumPy tier alone: the results of each, for the same arguments."""
    tiered = tracejit.jit(fn, tiered=True)
    results = [tiered(*args)]
    tiered.wait_compiled()
    results.append(tiered(*args))
    results.append(tracejit.jit(fn, tiered=False)(*args))
    results.append(tracejit.jit(fn, backend="numpy")(*args))
    return results


def assert_identical(got, want):
    """Same dtype, shape and values, NaN where NumPy has NaN, and zeros of the same sign."""
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_identical(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want, strict=True)
    if want.dtype.kind == "f":
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers])


def _runs_as_eagerly_on(fn, x):
    """Compiled and tiered: ``fn``'s results, and what it writes into the caller's array, are
    NumPy's eager ones."""
    want_x = x.copy()
    want = fn(want_x)
    for kw in ({"tiered": False}, {"tiered": True}):
        got_x = x.copy()
        assert_identical(tracejit.jit(fn, **kw)(got_x), want)
        assert_identical(got_x, want_x)


def assert_same_on_every_tier(fn, *args):
    with np.errstate(all="ignore"):
        want = fn(*args)
        for got in on_every_tier(fn, *args):
            assert_identical(got, want)


def line_of(fn, offset=1):
    """The line ``offset`` lines below ``def`` in ``fn``'s source."""
    return fn.__code__.co_firstlineno + offset


# --- np.round ----------------------------------------------------------------------------------


def _integers(dtype, extremes=True):
    """Ties (15, 25, 125, ...) and non-ties of both signs the dtype holds, and, with
    ``extremes``, its minimum and maximum (rounding them can leave the range)."""
    info = np.iinfo(dtype)
    values = [0, 1, 4, 5, 6, 14, 15, 16, 25, 35, 45, 50, 95, 105, 114, 115, 125, 250, 1500,
              2500, 3500, 12345]
    values = [v for v in values if v <= info.max] + [-v for v in values if -v >= info.min]
    if extremes:
        values += [info.min, info.max, info.max - 4, info.min + 4]
    return np.array(values, dtype)


def _round_every_way(x):
    return (tuple(np.round(x, d) for d in range(-3, 4))
            + (x.round(-1), np.around(x, -2), x.round()))


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16", "uint32"])
def test_round_of_an_integer_array_keeps_its_dtype(dtype):
    """decimals >= 0 leave integers as they are; decimals < 0 round half to even to multiples
    of 10**-decimals (NumPy: in float64, cast back, so beyond the range it wraps)."""
    assert_same_on_every_tier(_round_every_way, _integers(dtype))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint64"])
def test_round_of_a_wide_integer_array_keeps_its_dtype(dtype):
    assert_same_on_every_tier(_round_every_way, _integers(dtype, extremes=False))


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="NumPy's result is an out-of-range float cast, whose value is x86's")
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint64"])
def test_round_beyond_a_wide_integer_range_gives_numpys_cast(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.max, info.max - 4, info.min, info.min + 4, 7], dtype)
    assert_same_on_every_tier(lambda x: (np.round(x, -1), np.round(x, -3)), x)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_round_with_negative_decimals_divides_by_the_power_of_ten(dtype):
    """np.round(x, -3) is rint(x / 1000) * 1000: scaling by 0.001 (inexact) would give
    2999.9998 for 2744 in float32, and 7e11 for 7.5e11 to -11 decimals in float64."""
    x = np.array([2744, 6270, 8255, 2500, -2500, 1500, 0.125, 1.005, 2.5, -0.0, 0.0, 15, 25,
                  1234.5678, 3.14159, 65504, 7.5e11, np.inf, -np.inf, np.nan])
    with np.errstate(over="ignore"):
        x = x.astype(dtype)             # 7.5e11 is inf in float16
    assert_same_on_every_tier(lambda x: _round_every_way(x) + (np.round(x, -11),), x)


def test_round_of_a_bool_array_is_numpys():
    x = np.array([True, False])
    assert_same_on_every_tier(lambda x: np.round(x), x)        # rint: float16
    with pytest.raises(TypeError, match=HERE):
        tracejit.jit(lambda x: np.round(x, 1), tiered=False)(x)


# --- power ---------------------------------------------------------------------------------------

SPECIAL = [-0.0, 0.0, -np.inf, np.inf, np.nan, 4.0, -4.0, 2.0, 0.5, 1e-3]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_x_to_the_one_half_is_sqrt_at_negative_zero_and_infinity(dtype):
    """``x ** 0.5`` is np.sqrt(x): -0.0 at -0.0 and NaN at -inf, where pow gives 0.0 and inf."""
    x = np.array(SPECIAL, dtype)

    def f(x):
        y = x.copy()
        y **= 0.5
        return x ** 0.5, y, x ** -1, x ** 2, x ** 1, x ** 0, x ** 0.25

    assert_same_on_every_tier(f, x)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_np_power_takes_sqrt_where_numpys_loop_does(dtype):
    """np.power's float32 and float64 loops take sqrt for a broadcast exponent of 0.5 (a
    scalar, 0-d or one-element array); float16's, and one of 0.5 per element, take pow."""
    x = np.array(SPECIAL, dtype)

    def f(x):
        return (np.power(x, 0.5), np.power(x, np.float32(0.5)), np.power(x, np.array(0.5)),
                np.power(x, np.array([0.5])), np.power(x[:1], np.array([0.5], x.dtype)),
                np.power(x, 0.50000001), np.power(x, 2), np.power(x, -1))

    assert_same_on_every_tier(f, x)


def test_power_shortcuts_give_numpys_dtypes_for_bool_arrays():
    """``b ** 2`` is np.square (int8 for bools), np.power(b, 2) and ``b ** 1`` are int64."""
    b = np.array([True, False, True])
    assert_same_on_every_tier(
        lambda b: (b ** 2, np.power(b, 2), b ** 1, b ** 0, np.square(b), b ** 2.0, b ** 0.5), b)


# --- Python ints out of an integer array's range -------------------------------------------------


def _write_300(x):
    x[0] = 300
    return x


def _writes(x):
    """Each write of an out-of-range Python number NumPy refuses, by what it writes with."""
    return {
        "x[0] = 300": lambda: x.__setitem__(0, 300),
        "x[:] = 300": lambda: x.__setitem__(slice(None), 300),
        "x[:2] = [1, 300]": lambda: x.__setitem__(slice(0, 2), [1, 300]),
        "x[[0, 1]] = 300": lambda: x.__setitem__([0, 1], 300),
        "x[x > 0] = 300": lambda: x.__setitem__(x > 0, 300),
        "x[0] = 300.0": lambda: x.__setitem__(0, 300.0),
        "x.fill(300)": lambda: x.fill(300),
        "np.copyto(x, 300)": lambda: np.copyto(x, 300),
        "x[0] = -129": lambda: x.__setitem__(0, -129),
    }


@pytest.mark.parametrize("tiered", [False, True], ids=["untiered", "tiered"])
def test_writing_an_out_of_range_python_int_into_an_int8_array_raises_overflow_error(tiered):
    x = np.array([1, 2, 3], np.int8)
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        _write_300(x.copy())
    with pytest.raises(OverflowError, match="300 out of bounds for int8") as info:
        tracejit.jit(_write_300, tiered=tiered)(x.copy())
    assert f"{HERE}:{line_of(_write_300)}" in str(info.value)
    assert "x.astype(np.int64)" in str(info.value)
    for what in _writes(x):
        def f(x, what=what):
            _writes(x)[what]()
            return x
        with pytest.raises(OverflowError):
            f(x.copy())
        with pytest.raises(OverflowError, match=HERE):
            tracejit.jit(f, tiered=tiered)(x.copy())


def test_writing_a_negative_python_int_into_a_uint8_array_raises_overflow_error():
    def f(x):
        x[1] = -1
        return x

    with pytest.raises(OverflowError, match="-1 out of bounds for uint8"):
        tracejit.jit(f, tiered=False)(np.zeros(3, np.uint8))


def test_writes_numpy_accepts_keep_its_values():
    """In range, floats (truncated), arrays (cast unsafely: they wrap), bools and huge ints
    into float arrays are written as NumPy writes them."""
    def f(i8, u8, b, f32):
        i8[0] = -128
        i8[1] = 3.7
        i8[2:] = np.array([300, -129])
        u8[:] = [255, True, 7.9]
        b[0] = 300
        f32[0] = 2**70
        np.fill_diagonal(f32.reshape(2, 2), 127)
        return i8, u8, b, f32

    def args():
        return (np.zeros(4, np.int8), np.zeros(3, np.uint8), np.zeros(2, bool),
                np.zeros(4, np.float32))

    assert_same_on_every_tier(f, *args())


@pytest.mark.parametrize("tiered", [False, True])
def test_a_python_int_argument_out_of_an_int8_arrays_range_raises_overflow_error(tiered):
    x = np.array([1, 2, 3], np.int8)
    with pytest.raises(OverflowError):
        x + 200
    f = tracejit.jit(lambda x, s: x + s, tiered=tiered)
    np.testing.assert_array_equal(f(x, 100), x + 100)       # in range: traced once, then
    with pytest.raises(OverflowError, match=r"200 out of bounds for int8 at .*\.py:\d+"):
        f(x, 200)                                             # the same trace checks it
    with pytest.raises(OverflowError):
        tracejit.jit(lambda x, s: x - s, tiered=tiered)(np.array([1], np.uint8), -1)
    assert f.trace_count == 1

    def write(x, s):
        x[0] = s
        return x
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        tracejit.jit(write, tiered=tiered)(x.copy(), 300)
    # comparisons are exact in NumPy 2, whatever the int: no error
    np.testing.assert_array_equal(tracejit.jit(lambda x, s: x < s, tiered=tiered)(x, 300),
                                  x < 300)


# --- Tracer methods ------------------------------------------------------------------------------


def test_view_of_a_traced_array_shares_its_memory():
    def f(x):
        y = x.view()
        y[0] = -7
        z = x.view(x.dtype)
        x[1] = -8
        return x.sum(), y[1], z[0]

    _runs_as_eagerly_on(f, np.arange(4.0))


def test_view_as_another_dtype_is_refused_naming_the_line():
    def f(x):
        return x.view(np.int64)

    with pytest.raises(UnsupportedError, match=f"{HERE}:{line_of(f)}") as info:
        tracejit.jit(f)(np.arange(4.0))
    assert "x.astype(np.int64)" in str(info.value)


def test_assigning_to_shape_says_to_reshape():
    def f(x):
        x.shape = (4, 3)
        return x

    with pytest.raises(AttributeError, match=f"{HERE}:{line_of(f)}") as info:
        tracejit.jit(f)(np.arange(12.0))
    assert isinstance(info.value, UnsupportedError)
    assert "x = x.reshape((4, 3))" in str(info.value)

    def falls_back(x):                      # code written for NumPy's AttributeError
        try:
            x.shape = (4, 3)
        except AttributeError:
            x = x.reshape(4, 3)
        return x

    assert_identical(tracejit.jit(falls_back)(np.arange(12.0)), falls_back(np.arange(12.0)))


def test_max_and_min_methods_take_initial_as_np_max_does():
    def f(x):
        return (x.max(initial=100.0), x.min(initial=-1.0), x.max(axis=0, initial=4.5),
                x[:0].max(initial=0.5), x.min(0, None, True, 2.0), np.max(x, initial=100.0))

    assert_same_on_every_tier(f, np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("shift", [lambda x: x << 2, lambda x: x >> 1, lambda x: 1 << x],
                         ids=["lshift", "rshift", "rlshift"])
def test_shift_operators_give_numpys_results(shift):
    """Were refused (write x * 2**k); now exact products and floor divisions by 2**k."""
    x = np.array([-5, -1, 0, 1, 3, 2**40], np.int64)
    np.testing.assert_array_equal(tracejit.jit(shift)(x), shift(x))


def test_astype_without_copy_returns_the_array_itself():
    """astype(x.dtype, copy=False) is x: a write into it changes x (and the caller's array);
    astype copies by default."""
    def no_copy(x):
        y = x.astype(x.dtype, copy=False)
        y[0] = -7
        return x, y.sum()

    def copies(x):
        y = x.astype(x.dtype)
        y[0] = -7
        return x, y

    for fn in (no_copy, copies):
        _runs_as_eagerly_on(fn, np.arange(4.0))


def test_astype_with_a_casting_rule_refuses_as_numpy_does():
    def f(x):
        return x.astype(np.int32, casting="same_kind")

    with pytest.raises(TypeError, match="according to the rule 'same_kind'"):
        f(np.arange(3.0))
    with pytest.raises(TypeError, match=f"{HERE}:{line_of(f)}"):
        tracejit.jit(f)(np.arange(3.0))


# --- isclose, linspace, var/std dtype, logit -----------------------------------------------------


def test_isclose_uses_the_tolerance_only_where_b_is_finite_and_compares_ints_as_floats():
    i64 = np.iinfo(np.int64)
    for a, b in [(np.array([5.0, -np.inf, 0.0, np.inf, np.nan, 1.0]),
                  np.array([np.inf, np.inf, 0.0, np.inf, np.nan, 1.0 + 1e-9])),
                 (np.array([i64.min, 3]), np.array([i64.max, 3])),
                 (np.array([1, 2], np.int8), np.array([1.0000001, 3.0]))]:
        assert_same_on_every_tier(lambda a, b: np.isclose(a, b), a, b)
        assert_same_on_every_tier(lambda a, b: np.isclose(a, b, equal_nan=True), a, b)


def test_linspace_into_integers_floors_as_numpy_2_does():
    assert_same_on_every_tier(lambda a: np.linspace(a, 10, 4, dtype=int), np.float64(-3.5))
    assert_same_on_every_tier(lambda b: np.linspace(-7, b, 5, dtype=np.int32), np.float64(2.2))


def test_var_and_std_compute_in_the_dtype_asked_for():
    x = np.arange(12.0).reshape(3, 4)
    for f in (lambda a: np.var(a, dtype=np.float32), lambda a: np.std(a, axis=0,
                                                                       dtype=np.float32),
              lambda a: a.var(axis=1, dtype=np.float16), lambda a: a.std(dtype=np.float32)):
        want = f(x)
        for got in on_every_tier(f, x):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-3)


def test_logit_of_float16_and_integers_is_float64_as_scipys():
    import scipy.special
    for x in (np.array([0.25, 0.5], np.float16), np.array([0, 1]),
              np.array([0.25], np.float32)):
        want = scipy.special.logit(x)
        for got in on_every_tier(lambda p: scipy.special.logit(p), x):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_bfloat16_to_the_one_half_is_pow_as_ml_dtypes_computes_it():
    """ml_dtypes' bfloat16 ** takes pow, not sqrt: +0 at -0.0 and inf at -inf."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([-0.0, -np.inf, 4.0, 2.0], ml_dtypes.bfloat16)
    assert_same_on_every_tier(lambda x: x ** 0.5, x)
