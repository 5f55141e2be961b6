"""Elementwise NumPy ops on Tracers: arithmetic, comparisons, logical and bitwise ops, the
float functions (exp, log, sin, ...), where and clip.

Each promotes its operands as NumPy would (primitives.promote) and emits one IR op, or a few
for the functions NumPy composes (fmax, logaddexp, trunc, ...). Kept apart from primitives.py,
which holds the lifting and promotion every op module shares; callers reach these ops as
``primitives.NAME``.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes, ops
from ..ir.dtypes import DType
from .errors import numpy_error, unsupported
from .primitives import (broadcast_shapes, constant, convert, dt, emit, lift, lift_all, promote,
                         result_dtype)
from .shapes import broadcast_to
from .tracer import Tracer


def _binary(opdef, a, b, dtype=None, out_bool=False):
    a, b = promote(a, b, dtype=dtype)
    return emit(a._trace, opdef, [a, b], weak=(a._weak and b._weak and not out_bool))


def _float_result(*xs) -> DType:
    d = result_dtype(*xs)
    return d if d.is_float else dtypes.float64


def add(a, b):
    if result_dtype(a, b).is_bool:
        return _binary(ops.logical_or, a, b)
    return _binary(ops.add, a, b)


def subtract(a, b):
    if result_dtype(a, b).is_bool:
        raise numpy_error(TypeError, "numpy boolean subtract, the `-` operator, is not "
                          "supported", "use np.logical_xor or ^ instead")
    return _binary(ops.sub, a, b)


def multiply(a, b):
    if result_dtype(a, b).is_bool:
        return _binary(ops.logical_and, a, b)
    return _binary(ops.mul, a, b)


def true_divide(a, b):
    return _binary(ops.div, a, b, dtype=_float_result(a, b))


def _numeric(name, a, b):
    d = result_dtype(a, b)
    if d.is_bool:
        raise unsupported(f"{name} on bool arrays", "convert to an integer dtype first")
    return d


def floor_divide(a, b):
    return _binary(ops.floor_divide, a, b, dtype=_numeric("floor_divide", a, b))


def remainder(a, b):
    return _binary(ops.remainder, a, b, dtype=_numeric("remainder", a, b))


def power(a, b):
    if isinstance(b, (int, float)) and not isinstance(b, bool) and isinstance(a, Tracer):
        if b == 2:
            return multiply(a, a)
        if b == 1:
            return a
    return _binary(ops.power, a, b, dtype=_numeric("power", a, b))


def maximum(a, b):
    return _binary(ops.maximum, a, b, dtype=_numeric("maximum", a, b))


def minimum(a, b):
    return _binary(ops.minimum, a, b, dtype=_numeric("minimum", a, b))


def arctan2(a, b):
    return _binary(ops.arctan2, a, b, dtype=_float_result(a, b))


def fmax(a, b):
    """maximum that ignores NaN: the other operand wins."""
    a, b = promote(a, b, dtype=_numeric("fmax", a, b))
    if not dt(a).is_float:
        return maximum(a, b)
    return where(isnan(b), a, where(isnan(a), b, maximum(a, b)))


def fmin(a, b):
    a, b = promote(a, b, dtype=_numeric("fmin", a, b))
    if not dt(a).is_float:
        return minimum(a, b)
    return where(isnan(b), a, where(isnan(a), b, minimum(a, b)))


def logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow: max(a, b) + log1p(exp(-|a - b|))."""
    a, b = promote(a, b, dtype=_float_result(a, b))
    m = maximum(a, b)
    return where(equal(a, b), add(a, np.asarray(math.log(2), dt(a).np)),
                 add(m, log1p(exp(negative(absolute(subtract(a, b)))))))


def hypot(a, b):
    a, b = promote(a, b, dtype=_float_result(a, b))
    return sqrt(add(multiply(a, a), multiply(b, b)))


def float_power(a, b):
    a, b = promote(a, b, dtype=dtypes.float64)
    return power(a, b)


def _compare(opdef):
    def f(a, b):
        return _binary(opdef, a, b, out_bool=True)
    return f


equal = _compare(ops.eq)
not_equal = _compare(ops.ne)
less = _compare(ops.lt)
less_equal = _compare(ops.le)
greater = _compare(ops.gt)
greater_equal = _compare(ops.ge)


def to_bool(x) -> Tracer:
    x = lift(x)
    if dt(x).is_bool:
        return x
    return not_equal(x, np.zeros((), dt(x).np))


def _logical(opdef):
    def f(a, b):
        return _binary(opdef, to_bool(a), to_bool(b), dtype=dtypes.bool_, out_bool=True)
    return f


logical_and = _logical(ops.logical_and)
logical_or = _logical(ops.logical_or)
logical_xor = _logical(ops.logical_xor)


def _bitwise(opdef, name):
    def f(a, b):
        d = result_dtype(a, b)
        if d.is_float:
            raise numpy_error(TypeError, f"ufunc '{name}' not supported for floating-point "
                              "inputs", "use integer or bool arrays")
        return _binary(opdef, a, b, dtype=d)
    return f


bitwise_and = _bitwise(ops.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(ops.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(ops.bitwise_xor, "bitwise_xor")


def _unary(opdef, x, weak_ok=True):
    x = lift(x)
    return emit(x._trace, opdef, [x], weak=x._weak and weak_ok)


def _float_unary(opdef, name):
    def f(x):
        x = lift(x)
        if dt(x).is_bool:
            raise unsupported(f"np.{name} of a bool array (NumPy would return float16)",
                              "convert it with .astype(np.float32) first")
        if dt(x).is_int:
            x = convert(x, dtypes.float64)
        return _unary(opdef, x)
    return f


exp = _float_unary(ops.exp, "exp")
expm1 = _float_unary(ops.expm1, "expm1")
log = _float_unary(ops.log, "log")
log1p = _float_unary(ops.log1p, "log1p")
sqrt = _float_unary(ops.sqrt, "sqrt")
sin = _float_unary(ops.sin, "sin")
cos = _float_unary(ops.cos, "cos")
tan = _float_unary(ops.tan, "tan")
tanh = _float_unary(ops.tanh, "tanh")
sinh = _float_unary(ops.sinh, "sinh")
cosh = _float_unary(ops.cosh, "cosh")
arcsin = _float_unary(ops.arcsin, "arcsin")
arccos = _float_unary(ops.arccos, "arccos")
arctan = _float_unary(ops.arctan, "arctan")
arcsinh = _float_unary(ops.arcsinh, "arcsinh")
arctanh = _float_unary(ops.arctanh, "arctanh")
rint = _float_unary(ops.round, "rint")
erf = _float_unary(ops.erf, "erf")
sigmoid = _float_unary(ops.logistic, "sigmoid")


def log2(x):
    y = log(x)
    return multiply(y, np.asarray(1 / math.log(2), dt(y).np))


def log10(x):
    y = log(x)
    return multiply(y, np.asarray(1 / math.log(10), dt(y).np))


def exp2(x):
    x = lift(x)
    return power(np.asarray(2, _float_result(x).np), x)


def _int_preserving(opdef, name):
    def f(x):
        x = lift(x)
        if not dt(x).is_float:
            if dt(x).is_bool:
                raise unsupported(f"np.{name} of a bool array")
            return x
        return _unary(opdef, x)
    return f


floor = _int_preserving(ops.floor, "floor")
ceil = _int_preserving(ops.ceil, "ceil")


def trunc(x):
    x = lift(x)
    if not dt(x).is_float:
        return x
    return where(less(x, 0), ceil(x), floor(x))


def negative(x):
    x = lift(x)
    if dt(x).is_bool:
        raise numpy_error(TypeError, "the numpy boolean negative, the `-` operator, is not "
                          "supported", "use the `~` operator or np.logical_not instead")
    return _unary(ops.neg, x)


def absolute(x):
    x = lift(x)
    return x if dt(x).is_bool else _unary(ops.abs, x)


def sign(x):
    x = lift(x)
    if dt(x).is_bool:
        raise unsupported("np.sign of a bool array")
    return _unary(ops.sign, x)


def square(x):
    return multiply(x, x)


def reciprocal(x):
    x = lift(x)
    if not dt(x).is_float:
        raise unsupported("np.reciprocal of an integer array", "divide: 1.0 / x")
    return true_divide(np.ones((), dt(x).np), x)


def logical_not(x):
    return _unary(ops.logical_not, to_bool(x), weak_ok=False)


def invert(x):
    x = lift(x)
    if dt(x).is_bool:
        return logical_not(x)
    if dt(x).is_float:
        raise numpy_error(TypeError, "ufunc 'invert' not supported for floating-point "
                          "inputs", "use integer or bool arrays")
    return bitwise_xor(x, np.asarray(-1, dt(x).np))


def _float_test(opdef, int_value):
    def f(x):
        x = lift(x)
        if not dt(x).is_float:
            return broadcast_to(constant(int_value, dtypes.bool_, x._trace), x.shape)
        return _unary(opdef, x, weak_ok=False)
    return f


isnan = _float_test(ops.isnan, False)
isinf = _float_test(ops.isinf, False)
isfinite = _float_test(ops.isfinite, True)


def where(cond, a, b):
    c = to_bool(cond)
    ta, tb = lift_all(a, b)
    target = result_dtype(ta, tb)
    shape = broadcast_shapes(c.shape, ta.shape, tb.shape)
    c = broadcast_to(c, shape)
    ta = broadcast_to(convert(ta, target), shape)
    tb = broadcast_to(convert(tb, target), shape)
    return emit(c._trace, ops.where, [c, ta, tb], weak=ta._weak and tb._weak)


def clip(x, lo=None, hi=None):
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return x
