"""Bugs found probing indexing and integer/dtype semantics against NumPy eagerly: each pinned
on the interpreter (the reference semantics) and on the compiled kernels."""
import numpy as np
import pytest

import tracejit

INTS = np.array([-7, 7, 0, -2**31, 2**31 - 1, 5, -1, 1], np.int64)


def _assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


def _on_every_backend(f, *args):
    for jitted in (tracejit.jit(f, backend="interpreter"), tracejit.jit(f, tiered=False)):
        _assert_same(jitted(*args), f(*args))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "uint64"])
def test_fabs_of_integers_is_numpys_float_not_the_integer_dtype(dtype):
    """np.fabs was np.abs: int8 kept int8 (NumPy: float16), and fabs(INT64_MIN) stayed
    negative."""
    x = INTS.astype(dtype)
    _on_every_backend(lambda x: np.fabs(x), x)


def test_fabs_of_int64_min_is_positive():
    x = np.array([-2**63, -1, 3], np.int64)
    _on_every_backend(lambda x: np.fabs(x), x)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8])
def test_mean_with_an_integer_dtype_sums_in_it_and_truncates(dtype):
    """NumPy sums in the dtype asked for (wrapping), divides and casts back: an int64 mean of
    [0, 1] is 0 (was float64 0.5), a uint8 one of int32 values wraps first."""
    x = np.array([-7, 7, 0, 5, 1, 1, -2], np.int32)
    _on_every_backend(lambda x: (np.mean(x, dtype=dtype), x.mean(dtype=dtype),
                                 x.reshape(1, 7).mean(axis=1, dtype=dtype, keepdims=True)), x)


def test_sum_prod_cumsum_cumprod_with_dtype_bool_are_logical_or_and_and():
    """NumPy's bool add and multiply loops are or and and; these raised an internal
    IRTypeError (reduce_sum needs numeric operands)."""
    x = np.array([[-7, 0, 0], [0, 0, 2]], np.int32)
    _on_every_backend(lambda x: (x.sum(dtype=bool), np.sum(x, axis=0, dtype=bool),
                                 np.prod(x, axis=1, dtype=bool, keepdims=True),
                                 np.cumsum(x, dtype=bool), np.cumprod(x, axis=1, dtype=bool)),
                      x)


def test_a_constant_uint64_index_array_is_read_as_intp():
    """A uint64 index array known while tracing (2**64 - 1 is -1 as intp, as NumPy reads it)
    was refused as out of bounds; traced ones were already right."""
    x = np.arange(24.0).reshape(4, 6)
    _on_every_backend(lambda x: (x[np.array([2**64 - 1, 3], np.uint64)],
                                 x[np.array([2**64 - 1], np.uint64),
                                   np.array([1, 2**64 - 6], np.uint64)]), x)


def test_a_zero_dimensional_boolean_array_index_is_refused_cleanly():
    """x[np.array(True)] failed inside np.nonzero (0-d arrays); refused as x[np.True_] is."""
    x = np.arange(6.0)
    with pytest.raises(tracejit.tracer.errors.UnsupportedError, match="bool"):
        tracejit.jit(lambda x: x[np.array(True)], backend="interpreter")(x)


def test_take_casts_boolean_indices_and_take_along_axis_refuses_non_integers():
    x = np.arange(12.0).reshape(3, 4)
    _on_every_backend(lambda x, i: np.take(x, i, axis=1), x, np.array([True, False]))
    for idx in (np.array([[1], [0], [1]], bool), np.array([[1.0], [0.0], [1.0]])):
        with pytest.raises(IndexError):
            np.take_along_axis(x, idx, axis=1)
        with pytest.raises(IndexError):
            tracejit.jit(lambda x, i: np.take_along_axis(x, i, axis=1),
                         backend="interpreter")(x, idx)


def _add_at(a, i, v):
    np.add.at(a, i, v)
    return a


def _subtract_at(a, i, v):
    np.subtract.at(a, i, v)
    return a


@pytest.mark.parametrize("values", [np.float32(2.5), np.array([2.7, 1.5]),
                                    np.array([2.7, 1.5], np.float32), np.int64(3)])
def test_ufunc_at_casts_the_values_to_the_arrays_dtype_unsafely(values):
    """NumPy's ufunc.at casts the values into a's dtype (unsafe) and runs a's loop: adding
    2.7 and 1.5 at one int32 position adds 3. tracejit raised TypeError (same_kind)."""
    for dtype, fs in ((np.int32, (_add_at, _subtract_at)), (np.uint8, (_add_at,))):
        a = np.arange(4, dtype=dtype)
        for f in fs:
            want = f(a.copy(), [1, 1], values)
            for jitted in (tracejit.jit(f, backend="interpreter"), tracejit.jit(f, tiered=False)):
                _assert_same(jitted(a.copy(), [1, 1], values), want)


def _mask_iadd(a, v):
    a[a > 1] += v
    return a


def _mask_idiv(a, v):
    a[a > 1] /= v
    return a


@pytest.mark.parametrize("f, v", [(_mask_iadd, 1.5), (_mask_idiv, 2)])
def test_an_in_place_operator_under_a_mask_casts_same_kind_as_numpy(f, v):
    """x[mask] += 1.5 on an int array is NumPy's UFuncTypeError (the selected copy's
    __iadd__ casts same_kind); tracejit wrote the truncated sum."""
    a = np.arange(5, dtype=np.int32)
    with pytest.raises(TypeError):
        f(a.copy(), v)
    with pytest.raises(TypeError, match="same_kind"):
        tracejit.jit(f, backend="interpreter")(a.copy(), v)

    def accepted(a, b, c):
        a[a > 1] *= np.uint16(3)    # uint16 into uint8: same_kind, wraps
        b[b > 1] /= 2
        c[c > 1] **= 2
        return a, b, c
    args = (np.arange(100, 104, dtype=np.uint8), np.arange(4, dtype=np.float32),
            np.arange(4, dtype=np.int8))
    want = accepted(*(x.copy() for x in args))
    for jitted in (tracejit.jit(accepted, backend="interpreter"),
                   tracejit.jit(accepted, tiered=False)):
        _assert_same(jitted(*(x.copy() for x in args)), want)


def _copyto(a, v):
    np.copyto(a, v)
    return a


@pytest.mark.parametrize("dtype, v", [(np.int32, 2.5), (np.int32, 2.0), (np.bool_, 1)])
def test_copyto_refuses_a_python_number_of_a_higher_kind_as_numpy_2_does(dtype, v):
    a = np.zeros(3, dtype)
    with pytest.raises(TypeError):
        _copyto(a.copy(), v)
    with pytest.raises(TypeError, match="same_kind"):
        tracejit.jit(_copyto, backend="interpreter")(a.copy(), v)

    def unsafe(a):
        np.copyto(a, v, casting="unsafe")
        return a
    _on_every_backend(unsafe, a)


def test_take_force_casts_indices_that_are_not_an_array_as_numpy_does():
    """np.take(x, []) and np.take(x, [1.5, 2.7]) are intp indices in NumPy (a list is cast
    unsafely; only a float ndarray is refused); tracejit refused them as non-integers."""
    x = np.arange(12.0).reshape(3, 4)
    _on_every_backend(lambda x: (np.take(x, [], axis=0), np.take(x, [1.5, 2.7], axis=1),
                                 np.take(x, 2.9)), x)


def test_np_put_at_a_traced_position_out_of_range_raises_as_numpys():
    """-n - 1 became -1 once n was added, so it wrote the last element silently."""
    def f(x, i):
        y = x.copy()
        np.put(y, i, 7.0)
        return y
    jitted = tracejit.jit(f)
    x = np.arange(10.0)
    np.testing.assert_array_equal(jitted(x, np.array([-10, 9])), f(x, np.array([-10, 9])))
    for bad in ([-11], [10]):
        with pytest.raises(IndexError):
            jitted(x, np.array(bad))
