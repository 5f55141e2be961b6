"""Regression tests for dtypes and values at the edges, compiled code and the NumPy tier against
NumPy 2 eager (NEP 50: Python numbers are weak, what NumPy returns is not). Each test failed
before its fix."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj


def _same(got, want):
    assert type(got) is type(want) or isinstance(got, tuple) == isinstance(want, tuple)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


def _both_tiers(f, *args):
    want = f(*args)
    for tiered in (True, False):
        _same(tj.jit(f, tiered=tiered)(*args), want)


# -- a traced Python number becomes strong where NumPy makes an array or scalar of it ----------

def _numpy_of_python_number(a, s):
    return (a * np.sqrt(s), a + np.add(s, 1), a + np.asarray(s), a + np.full(3, s),
            a + np.sum(s), a + np.maximum(s, 0), a + np.broadcast_to(s, (3,)),
            a * np.abs(s), a + np.cumsum(s), a + np.zeros_like(s),
            a * (s * 2 + 1), a + abs(s), a + s // 2)     # Python's own: still weak


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_numpy_functions_of_a_python_number_argument_are_strong(dtype):
    """``x32 * np.sqrt(s)`` is float64 in NumPy (np.sqrt of a Python float is an np.float64),
    ``u8 + np.full(3, s)`` int64; a Python number argument stayed weak through them, so they
    kept float32 and uint8 (200 + 100 wrapped to 44). Python's own operators on it give a
    Python number, still weak."""
    a = np.array([1, 2, 200], dtype)
    for s in (100, 2.5):
        _both_tiers(_numpy_of_python_number, a, s)


def test_full_like_of_a_python_int_argument_that_does_not_fit_raises_as_numpy():
    """np.full_like(u8, 300) is NumPy's OverflowError; with 300 an argument it wrapped to 44."""
    def f(a, s):
        return np.full_like(a, s), np.full(2, s, np.int8)

    a = np.zeros(3, np.uint8)
    _both_tiers(f, a, 7)
    for s in (300, -1):
        for tiered in (True, False):
            with pytest.raises(OverflowError):
                tj.jit(f, tiered=tiered)(a, s)


# -- bool operands of the ops whose NumPy loops start at int8 -----------------------------------

def _bool_arithmetic(a, b):
    return (a // b, a % b, a ** b, np.fmod(a, b), np.divmod(a, b), np.fmax(a, b),
            np.fmin(a, b), a // True, a ** False, np.floor(a), np.ceil(a), np.trunc(a))


def test_bool_floor_divide_remainder_power_fmax_and_floor_give_numpys_dtypes():
    """bool // bool, %, ** and fmod are int8 in NumPy (its 'bb->b' loops), fmax and fmin of
    bools are bools, and NumPy 2.4's floor, ceil and trunc of bools are the bools; all were
    refused while tracing."""
    a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
    with np.errstate(divide="ignore"):
        _both_tiers(_bool_arithmetic, a, b)


# -- writes -------------------------------------------------------------------------------------

def _fancy_writes(x, m, i):
    x = x.copy()
    x[m] = np.int64(300)            # a NumPy scalar, by a mask: cast unsafely (44)
    x[i] = np.float64(1e5)          # by integer positions: -96
    x[:, 0][np.array([1])] = np.uint64(2**64 - 1)
    return x


def test_a_numpy_scalar_written_by_a_mask_or_integer_key_is_cast_unsafely_as_numpy():
    """NumPy's fancy assignment makes a NumPy scalar an array of its own dtype and casts it
    (x[mask] = np.int64(300) into int8 is 44), where x[0] = np.int64(300) raises; tracejit
    raised OverflowError, calling it a Python integer, for both."""
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    m = np.array([[True, False, False], [False, False, True]])
    with np.errstate(invalid="ignore", over="ignore"):
        _both_tiers(_fancy_writes, x, m, (np.array([0]), np.array([1])))
    with pytest.raises(OverflowError):
        tj.jit(lambda x: (x.__setitem__(0, np.int64(300)), x)[1])(x.copy())


# -- functions that np.asarray their operands: a Python number is an array there -----------------

def _converting(a, s):
    return (np.searchsorted(a, 0.1, side="right"), np.digitize(0.1, a), np.isin(a, 0.1),
            np.append(a, 0.1), np.searchsorted(a, s, side="right"), np.isin(a, s),
            np.dot(a, s), np.einsum("i,->i", a, s), np.convolve(a, s))


def test_searchsorted_isin_append_and_dot_take_a_python_number_as_an_array():
    """np.searchsorted(float32 a, 0.1) compares in float64, as NumPy converts v first: the
    float32 0.1 in a is above 0.1 (tracejit rounded 0.1 to float32, found it equal and
    answered 1, not 0); np.isin likewise, np.append(float32 a, 0.1) is float64, and np.dot,
    np.einsum and np.convolve of a traced Python float argument were float32."""
    a = np.array([0.1, 1.0, 2.0], np.float32)
    _both_tiers(_converting, a, 0.1)


def test_searchsorted_of_a_python_int_beyond_the_arrays_dtype_does_not_wrap():
    """np.searchsorted(int8 a, 300) is len(a) and (a, -200) is 0; 300 wrapped to 44 in int8."""
    _both_tiers(lambda a: (np.searchsorted(a, 300), np.searchsorted(a, -200),
                           np.digitize(300, a)), np.array([-5, 1, 100], np.int8))


def _joined(a, s):
    return (np.stack([a[0], s]), np.hstack([a, s]), np.diff(a, prepend=s), np.percentile(a, s),
            np.quantile(a, s / 100))


def test_stack_hstack_and_diff_prepend_of_a_python_number_argument_are_numpys():
    """np.stack([x32[0], s]) and np.hstack([x32, s]) are float64 (NumPy makes s an array), as
    np.diff(x32, prepend=s); but np.percentile(x32, s) stays float32 (NumPy keeps a Python
    float q weak): a traced s gave float32, float32, float32 and float64."""
    _both_tiers(_joined, np.array([0.1, 1.0, 2.0], np.float32), 30.0)


# -- constants -----------------------------------------------------------------------------------

def _angles(x16, x32):
    return np.deg2rad(x16), np.rad2deg(x16), np.rad2deg(x32), np.degrees(x32)


def test_rad2deg_and_deg2rad_multiply_by_numpys_constants_bit_for_bit():
    """NumPy's float32 rad2deg multiplies by 180.0f / NPY_PIf = 57.295776, not float32(180 / pi)
    = 57.29578 (four in five float32 results were an ulp off), and its float16 loops compute
    in float32 and round once (a float16 constant made a third of them an ulp off)."""
    x16 = np.linspace(-300, 300, 4001).astype(np.float16)
    x32 = np.linspace(-7, 7, 4001).astype(np.float32)
    _both_tiers(_angles, x16, x32)


def test_float16_logaddexp2_is_computed_in_float32_and_rounded_once():
    """NumPy's half loop computes logaddexp2 in float32; tracejit rounded each of its steps
    (and 1/log(2)) to float16: one result in ten was an ulp or more off, on both tiers."""
    bits = np.random.default_rng(5).integers(0, 2**16, (2, 4000)).astype(np.uint16)
    a, b = bits.view(np.float16)
    with np.errstate(all="ignore"):
        _both_tiers(np.logaddexp2, a, b)
        _both_tiers(np.logaddexp2, np.array([-3, 0, 7], np.int8), np.int8(2))


# -- Python's own operators on a Python bool argument ------------------------------------------

def _python_bool_arithmetic(a, s):
    t = s
    t += s
    return (a + (s + s), a * (s - s), a + (-s), a + ~s, (s * s) + (s * s), a + (+s),
            a + abs(s), a + t, a + (True + s), a + (s ** 2), a + ~3)


@pytest.mark.parametrize("s", [True, False])
def test_python_bool_argument_takes_pythons_int_arithmetic(s):
    """With s a Python bool, s + s is the int 2 and -s, ~s, s - s are ints: tracejit applied
    NumPy's bool rules to the traced argument (s + s a logical or, True; ~True False; -s and
    s - s a TypeError), and ~ of a Python int argument made a strong int64."""
    _both_tiers(_python_bool_arithmetic, np.array([1, 2, 3], np.int8), s)


def test_python_int_argument_to_a_negative_constant_power_is_a_float():
    """Python's 2 ** -1 is 0.5; with the 2 a traced Python int argument the trace raised
    NumPy's 'Integers to negative integer powers are not allowed'."""
    _both_tiers(lambda a, s: (a * s ** -1, a + pow(s, -2), a + s ** 2),
                np.array([1, 2, 3], np.float32), 2)
