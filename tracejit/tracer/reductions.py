"""Reductions of Tracers over axes: sum, prod, mean, var, std, amax/amin, all/any and
argmax/argmin, with NumPy's accumulator dtypes, keepdims, and its rules for empty axes.

Kept apart from the elementwise ops (elementwise.py) and the shape ops (shapes.py) they are
built from; callers reach them as ``primitives.NAME``.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..ir import dtypes, ops
from ..ir.dtypes import DType
from .elementwise import maximum, minimum, multiply, sqrt, subtract, to_bool, true_divide
from .errors import numpy_error
from .primitives import convert, dt, emit, lift, requested_dtype
from .shapes import expand_dims, full, normalize_axes, normalize_axis, reshape
from .tracer import Tracer


def _reduce(opdef, x, axis, keepdims):
    x = lift(x)
    axes = normalize_axes(axis, x.ndim)
    out = emit(x._trace, opdef, [x], weak=x._weak, axes=axes) if axes else x
    if keepdims:
        out = reshape(out, [1 if i in axes else n for i, n in enumerate(x.shape)])
    return out


def _accumulator(x: Tracer, dtype) -> DType:
    if dtype is not None:
        return requested_dtype(dtype)
    d = dt(x)
    return dtypes.int64 if (d.is_bool or d.is_int) else d


def sum(x, axis=None, keepdims=False, dtype=None):
    x = lift(x)
    return _reduce(ops.reduce_sum, convert(x, _accumulator(x, dtype), x._weak), axis, keepdims)


def prod(x, axis=None, keepdims=False, dtype=None):
    x = lift(x)
    return _reduce(ops.reduce_prod, convert(x, _accumulator(x, dtype), x._weak), axis,
                   keepdims)


def _count(x: Tracer, axis) -> int:
    return math.prod(x.shape[a] for a in normalize_axes(axis, x.ndim))


def mean(x, axis=None, keepdims=False, dtype=None):
    x = lift(x)
    d = requested_dtype(dtype) if dtype is not None else (
        dt(x) if dt(x).is_float else dtypes.float64)
    s = sum(convert(x, d, x._weak), axis, keepdims)
    return true_divide(s, np.asarray(_count(x, axis), d.np))


def var(x, axis=None, keepdims=False, ddof=0):
    x = lift(x)
    m = mean(x, axis, keepdims=True)
    d = subtract(x if dt(x).is_float else convert(x, dtypes.float64), m)
    n = builtins.max(_count(x, axis) - ddof, 0)
    return true_divide(sum(multiply(d, d), axis, keepdims), np.asarray(n, dt(m).np))


def std(x, axis=None, keepdims=False, ddof=0):
    return sqrt(var(x, axis, keepdims, ddof))


def _extremum(opdef, name, x, axis, keepdims, initial):
    """max/min; ``initial`` joins every reduction (NumPy's way to give empty axes a value)."""
    x = lift(x)
    axes = normalize_axes(axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes):
        if initial is None:
            raise numpy_error(ValueError, f"zero-size array to reduction operation {name} "
                              f"which has no identity (np.{name[:3]} over an empty axis of an "
                              f"array of shape {x.shape})",
                              f"give empty axes a value with np.{name[:3]}(x, initial=...), "
                              "or check the shape")
        shape = [1 if i in axes else n for i, n in enumerate(x.shape)] if keepdims else [
            n for i, n in enumerate(x.shape) if i not in axes]
        return full(shape, convert(lift(initial, x._trace), dt(x)))
    out = _reduce(opdef, x, axis, keepdims)
    if initial is None:
        return out
    pick = maximum if opdef is ops.reduce_max else minimum
    return pick(out, convert(lift(initial, x._trace), dt(x)))


def amax(x, axis=None, keepdims=False, initial=None):
    return _extremum(ops.reduce_max, "maximum", x, axis, keepdims, initial)


def amin(x, axis=None, keepdims=False, initial=None):
    return _extremum(ops.reduce_min, "minimum", x, axis, keepdims, initial)


def _all_any(opdef, empty_value, x, axis, keepdims):
    x = to_bool(x)
    axes = normalize_axes(axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes):
        # np.all of nothing is True and np.any of nothing False; reduce_min/max have no identity
        shape = [1 if i in axes else n for i, n in enumerate(x.shape)] if keepdims else [
            n for i, n in enumerate(x.shape) if i not in axes]
        return full(shape, np.bool_(empty_value), trace=x._trace)
    return _reduce(opdef, x, axis, keepdims)


def all(x, axis=None, keepdims=False):
    return _all_any(ops.reduce_min, True, x, axis, keepdims)


def any(x, axis=None, keepdims=False):
    return _all_any(ops.reduce_max, False, x, axis, keepdims)


def _arg(opdef, x, axis, keepdims):
    x = lift(x)
    empty = x.size == 0 if axis is None else x.shape[normalize_axis(axis, x.ndim)] == 0
    if empty:
        raise numpy_error(ValueError, f"attempt to get {opdef.name} of an empty sequence "
                          f"(an axis of size 0 in an array of shape {x.shape})",
                          "check the shape: an empty axis has no largest or smallest element")
    if axis is None:
        out = emit(x._trace, opdef, [reshape(x, (-1,))], axis=0)
        return reshape(out, (1,) * x.ndim) if keepdims else out
    axis = normalize_axis(axis, x.ndim)
    out = emit(x._trace, opdef, [x], axis=axis)
    return expand_dims(out, axis) if keepdims else out


def argmax(x, axis=None, keepdims=False):
    return _arg(ops.argmax, x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    return _arg(ops.argmin, x, axis, keepdims)
