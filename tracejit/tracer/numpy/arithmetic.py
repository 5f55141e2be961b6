"""Elementwise arithmetic on Tracers: the operators (+ - * / // % ** and unary - ~ abs),
comparisons, logical and bitwise ops, and the selections built on them (where, clip, select, diff).

Each promotes its operands as NumPy would (lifting.promote) and emits one IR op. The float
functions (exp, log, sin, ...) are in math_functions.py, which builds on these.
"""
from __future__ import annotations

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error, unsupported
from ..tracer import Tracer
from .lifting import astype, broadcast_to, convert, emit, lift, lift_all, promote, trace_of
from .rules import broadcast_shapes, dt, float_result, normalize_axis, result_dtype
from .shapes import slice_


def binary_op(opdef, a, b, dtype=None, out_bool=False):
    """Promote ``a`` and ``b`` (to ``dtype`` if given) and emit ``opdef`` on them."""
    a, b = promote(a, b, dtype=dtype)
    return emit(a._trace, opdef, [a, b], weak=(a._weak and b._weak and not out_bool))


def unary_op(opdef, x, weak_ok=True):
    x = lift(x)
    return emit(x._trace, opdef, [x], weak=x._weak and weak_ok)


def add(a, b):
    if result_dtype(a, b).is_bool:
        return binary_op(ops.logical_or, a, b)
    return binary_op(ops.add, a, b)


def subtract(a, b):
    if result_dtype(a, b).is_bool:
        raise numpy_error(TypeError, "numpy boolean subtract, the `-` operator, is not "
                          "supported", "use np.logical_xor or ^ instead")
    return binary_op(ops.sub, a, b)


def multiply(a, b):
    if result_dtype(a, b).is_bool:
        return binary_op(ops.logical_and, a, b)
    return binary_op(ops.mul, a, b)


def true_divide(a, b):
    return binary_op(ops.div, a, b, dtype=float_result(a, b))


def numeric_dtype(name, a, b):
    """The result dtype of an op NumPy refuses on bools (floor_divide, power, maximum, ...)."""
    d = result_dtype(a, b)
    if d.is_bool:
        raise unsupported(f"{name} on bool arrays", "convert to an integer dtype first")
    return d


def floor_divide(a, b):
    return binary_op(ops.floor_divide, a, b, dtype=numeric_dtype("floor_divide", a, b))


def remainder(a, b):
    return binary_op(ops.remainder, a, b, dtype=numeric_dtype("remainder", a, b))


def divmod_(a, b):
    return floor_divide(a, b), remainder(a, b)


def power(a, b):
    if isinstance(b, (int, float)) and not isinstance(b, bool) and isinstance(a, Tracer):
        if b == 2:
            return multiply(a, a)
        if b == 1:
            return a
    return binary_op(ops.power, a, b, dtype=numeric_dtype("power", a, b))


def float_power(a, b):
    a, b = promote(a, b, dtype=dtypes.float64)
    return power(a, b)


def maximum(a, b):
    return binary_op(ops.maximum, a, b, dtype=numeric_dtype("maximum", a, b))


def minimum(a, b):
    return binary_op(ops.minimum, a, b, dtype=numeric_dtype("minimum", a, b))


def negative(x):
    x = lift(x)
    if dt(x).is_bool:
        raise numpy_error(TypeError, "the numpy boolean negative, the `-` operator, is not "
                          "supported", "use the `~` operator or np.logical_not instead")
    return unary_op(ops.neg, x)


def absolute(x):
    x = lift(x)
    return x if dt(x).is_bool else unary_op(ops.abs, x)


def sign(x):
    x = lift(x)
    if dt(x).is_bool:
        raise unsupported("np.sign of a bool array")
    return unary_op(ops.sign, x)


def square(x):
    return multiply(x, x)


def reciprocal(x):
    x = lift(x)
    if not dt(x).is_float:
        raise unsupported("np.reciprocal of an integer array", "divide: 1.0 / x")
    return true_divide(np.ones((), dt(x).np), x)


# ---------------------------------------------------------------------------------------------
# Comparisons, logical and bitwise ops


def _compare(opdef):
    def f(a, b):
        return binary_op(opdef, a, b, out_bool=True)
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
        return binary_op(opdef, to_bool(a), to_bool(b), dtype=dtypes.bool_, out_bool=True)
    return f


logical_and = _logical(ops.logical_and)
logical_or = _logical(ops.logical_or)
logical_xor = _logical(ops.logical_xor)


def logical_not(x):
    return unary_op(ops.logical_not, to_bool(x), weak_ok=False)


def _bitwise(opdef, name):
    def f(a, b):
        d = result_dtype(a, b)
        if d.is_float:
            raise numpy_error(TypeError, f"ufunc '{name}' not supported for floating-point "
                              "inputs", "use integer or bool arrays")
        return binary_op(opdef, a, b, dtype=d)
    return f


bitwise_and = _bitwise(ops.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(ops.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(ops.bitwise_xor, "bitwise_xor")


def invert(x):
    x = lift(x)
    if dt(x).is_bool:
        return logical_not(x)
    if dt(x).is_float:
        raise numpy_error(TypeError, "ufunc 'invert' not supported for floating-point "
                          "inputs", "use integer or bool arrays")
    return bitwise_xor(x, np.asarray(-1, dt(x).np))


# ---------------------------------------------------------------------------------------------
# Selections


def where(cond, a, b):
    c = to_bool(cond)
    ta, tb = lift_all(a, b)
    target = result_dtype(ta, tb)
    shape = broadcast_shapes(c.shape, ta.shape, tb.shape)
    c = broadcast_to(c, shape)
    ta = broadcast_to(convert(ta, target), shape)
    tb = broadcast_to(convert(tb, target), shape)
    return emit(c._trace, ops.where, [c, ta, tb], weak=ta._weak and tb._weak)


def where_function(condition, x=None, y=None):
    """np.where: only its three-argument form has a shape known before the data."""
    if x is None and y is None:
        raise unsupported("np.where(condition) with one argument (its result size depends "
                          "on the data)", "use np.where(condition, x, y)")
    return where(condition, x, y)


def clip(x, lo=None, hi=None):
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return x


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise numpy_error(ValueError, "list of cases must be same length as list of "
                          "conditions", "give one choice per condition")
    if not condlist:
        raise numpy_error(ValueError, "select with an empty condition list is not possible",
                          "give at least one condition")
    dtype = result_dtype(*choicelist, default)     # Python scalars weak, as in NumPy 2
    out = astype(lift(default, trace_of(*condlist, *choicelist)), dtype)
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = where(cond, astype(lift(choice, out._trace), dtype), out)
    return out


def diff(a, n=1, axis=-1, prepend=None, append=None):
    x = lift(a)
    if prepend is not None or append is not None:
        raise unsupported("np.diff with prepend= or append=", "concatenate them first")
    axis = normalize_axis(axis, x.ndim)
    for _ in range(n):
        m = x.shape[axis]
        lo, hi = [0] * x.ndim, list(x.shape)
        hi[axis] = max(m - 1, 0)
        first = slice_(x, lo, hi, [1] * x.ndim)
        lo[axis], hi[axis] = min(1, m), m
        rest = slice_(x, lo, hi, [1] * x.ndim)
        x = logical_xor(rest, first) if x.dtype == np.bool_ else subtract(rest, first)
    return x
