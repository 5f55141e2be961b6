"""Generated kernels follow NumPy's scalar semantics, compared with the interpreter."""
import numpy as np
import pytest

from tracejit.backend import compile_function
from tracejit.ir import Builder, TensorType, as_dtype, interpret, ops


def _binary(opdef, a, b):
    bld = Builder()
    t = TensorType(as_dtype(a.dtype), a.shape)
    x, y = bld.param(t), bld.param(t)
    fn = bld.build([bld.emit(opdef, [x, y]).result])
    return fn, [a, b]


def _unary(opdef, a, **attrs):
    bld = Builder()
    x = bld.param(TensorType(as_dtype(a.dtype), a.shape))
    fn = bld.build([bld.emit(opdef, [x], **attrs).result])
    return fn, [a]


def _check(fn, args):
    expected = interpret(fn, args)
    got = compile_function(fn, "numba")(args)
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


INTS = np.array([7, -7, 7, -7, 0, 5, -2**31, 2**31 - 1])
DIVS = np.array([2, 2, -2, -2, 3, 0, -1, -1])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("opdef", [ops.floor_divide, ops.remainder])
def test_integer_floor_division_and_remainder_signs_and_zero(opdef, dtype):
    a, b = INTS.astype(dtype), DIVS.astype(dtype)
    if dtype == "int64":
        a[6] = np.iinfo(np.int64).min
    _check(*_binary(opdef, a, b))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("opdef", [ops.add, ops.sub, ops.mul, ops.neg, ops.abs])
def test_integer_overflow_wraps(opdef, dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max, 3], dtype)
    b = np.array([1, -1, info.max, -4], dtype)
    _check(*(_binary(opdef, a, b) if opdef.num_operands == 2 else _unary(opdef, a)))


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 7.0])
SPECIAL2 = np.array([1.0, np.nan, 2.0, 0.0, 3.0, 0.0, np.inf, -np.inf])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opdef", [ops.div, ops.floor_divide, ops.remainder, ops.maximum,
                                   ops.minimum, ops.add, ops.mul, ops.power, ops.arctan2])
def test_float_binary_ops_propagate_nan_and_inf_like_numpy(opdef, dtype):
    _check(*_binary(opdef, SPECIAL.astype(dtype), SPECIAL2.astype(dtype)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opdef", [ops.exp, ops.tanh, ops.logistic, ops.log, ops.sqrt,
                                   ops.sign, ops.isnan, ops.isinf, ops.isfinite, ops.round])
def test_float_unary_special_values(opdef, dtype):
    fn, args = _unary(opdef, SPECIAL.astype(dtype))
    expected = interpret(fn, args)[0]
    got = compile_function(fn, "numba")(args)[0]
    np.testing.assert_allclose(got, expected, rtol=2e-7 if dtype == "float32" else 1e-15)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_float_to_int_conversion_of_special_values(dtype):
    a = np.array([np.nan, np.inf, -np.inf, 1e30, -3.7, 2.9, 0.0])
    with np.errstate(invalid="ignore"):
        _check(*_unary(ops.convert, a, dtype=as_dtype(dtype)))


@pytest.mark.parametrize("opdef", [ops.reduce_max, ops.reduce_min, ops.reduce_sum])
def test_reductions_propagate_nan(opdef):
    a = np.arange(40, dtype=np.float32).reshape(2, 20)
    a[1, 17] = np.nan
    _check(*_unary(opdef, a, axes=(1,)))


@pytest.mark.parametrize("opdef", [ops.argmax, ops.argmin])
def test_argmax_takes_the_first_nan_and_the_first_tie(opdef):
    a = np.array([[1.0, 3.0, 3.0, np.nan, np.nan], [2.0, 2.0, 1.0, 1.0, 0.5]], np.float32)
    _check(*_unary(opdef, a, axis=1))


def test_integer_power_wraps():
    a = np.array([3, -3, 2**20, 7], np.int64)
    b = np.array([3, 5, 4, 0], np.int64)
    _check(*_binary(ops.power, a, b))
