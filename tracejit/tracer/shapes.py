"""Shape and layout ops on Tracers: axis normalization, reshape, broadcast_to, transpose and
axis moves, squeeze/expand_dims, concatenate/stack, flip, slices and padding, and the arrays
made from a shape (iota, full).

These move, repeat or pad elements and never compute with them. Kept apart from primitives.py
(lifting and promotion), which calls reshape, stack and broadcast_to; callers reach these ops as
``primitives.NAME``.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..ir import dtypes, ops
from .errors import numpy_error, unsupported
from .primitives import (astype, constant, convert, dt, emit, lift, lift_all, requested_dtype,
                         result_dtype)
from .trace import current_trace
from .tracer import Tracer


# ---------------------------------------------------------------------------------------------
# Shapes


def normalize_axis(axis: int, ndim: int) -> int:
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise numpy_error(np.exceptions.AxisError, f"axis {axis} is out of bounds for array "
                          f"of dimension {ndim}", f"use an axis in [-{ndim}, {ndim})")
    return axis % ndim


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise numpy_error(ValueError, f"duplicate value in 'axis': {axis}",
                              "name each axis once")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def reshape(x, shape) -> Tracer:
    x = lift(x)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        raise numpy_error(ValueError, f"can only specify one unknown dimension: reshape to "
                          f"{tuple(shape)}", "give every size but one")
    if builtins.any(s < -1 for s in shape):
        raise numpy_error(ValueError, f"negative dimensions not allowed: reshape to "
                          f"{tuple(shape)}", "sizes are >= 0, or -1 for one inferred size")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.size % known:
            raise _reshape_error(x, shape)
        shape[shape.index(-1)] = x.size // known
    if math.prod(shape) != x.size:
        raise _reshape_error(x, shape)
    if tuple(shape) == x.shape:
        return x
    if x._value.op is not None and x._value.op.opdef is ops.reshape:
        # reshape of a reshape: one reshape of the original value
        x = Tracer(x._value.op.operands[0], x._trace, x._weak)
        if tuple(shape) == x.shape:
            return x
    return emit(x._trace, ops.reshape, [x], weak=x._weak, shape=shape)


def _reshape_error(x: Tracer, shape) -> ValueError:
    return numpy_error(ValueError, f"cannot reshape array of size {x.size} (shape {x.shape}) "
                       f"into shape {tuple(shape)}",
                       "the new shape must have as many elements as the old one")


def broadcast_to(x, shape) -> Tracer:
    x = lift(x)
    shape = tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    if len(shape) < x.ndim or builtins.any(
            n != 1 and n != m for n, m in zip(x.shape[::-1], shape[::-1])):
        raise numpy_error(ValueError, f"cannot broadcast an array of shape {x.shape} to the "
                          f"shape {shape}", "each dimension must be 1 or equal to the target's")
    # Drop the size-1 dims that grow, so the IR says exactly which dims are new.
    lead = len(shape) - x.ndim
    keep = [i for i, n in enumerate(x.shape) if n == shape[lead + i]]
    if len(keep) != x.ndim:
        x = reshape(x, [x.shape[i] for i in keep])
    return emit(x._trace, ops.broadcast_in_dim, [x], weak=x._weak, shape=shape,
                dims=tuple(lead + i for i in keep))


def transpose(x, axes=None) -> Tracer:
    x = lift(x)
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    axes = tuple(normalize_axis(a, x.ndim) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise numpy_error(ValueError, f"axes don't match array: axes {tuple(axes)} for an "
                          f"array of shape {x.shape}", "give each axis exactly once")
    if axes == tuple(range(x.ndim)):
        return x
    return emit(x._trace, ops.transpose, [x], weak=x._weak, perm=axes)


def swapaxes(x, a, b):
    x = lift(x)
    perm = list(range(x.ndim))
    a, b = normalize_axis(a, x.ndim), normalize_axis(b, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)


def moveaxis(x, source, destination):
    x = lift(x)
    src = [normalize_axis(s, x.ndim) for s in np.atleast_1d(source)]
    dst = [normalize_axis(d, x.ndim) for d in np.atleast_1d(destination)]
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def squeeze(x, axis=None):
    x = lift(x)
    if axis is None:
        axes = [i for i, n in enumerate(x.shape) if n == 1]
    else:
        axes = normalize_axes(axis, x.ndim)
        if builtins.any(x.shape[a] != 1 for a in axes):
            raise numpy_error(ValueError, "cannot select an axis to squeeze out which has "
                              f"size not equal to one: axis {axis} of shape {x.shape}",
                              "squeeze only axes of size 1, or call squeeze() without axis")
    return reshape(x, [n for i, n in enumerate(x.shape) if i not in axes])


def expand_dims(x, axis):
    x = lift(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = x.ndim + len(axes)
    axes = sorted(normalize_axis(a, ndim) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return reshape(x, shape)


def concatenate(xs, axis=0):
    if len(xs) == 0:
        raise numpy_error(ValueError, "need at least one array to concatenate",
                          "pass a non-empty list of arrays")
    xs = lift_all(*xs)
    if axis is None:
        xs = [reshape(x, (-1,)) for x in xs]
        axis = 0
    target = result_dtype(*xs)
    xs = [convert(x, target) for x in xs]
    if builtins.any(x.ndim == 0 for x in xs):
        raise numpy_error(ValueError, "zero-dimensional arrays cannot be concatenated",
                          "make them 1-D first, e.g. np.atleast_1d(x) or x[None]")
    axis = normalize_axis(axis, xs[0].ndim)
    for i, x in enumerate(xs[1:], 1):
        if x.ndim != xs[0].ndim:
            raise numpy_error(ValueError, "all the input arrays must have same number of "
                              f"dimensions, but the array at index 0 has {xs[0].ndim} "
                              f"dimension(s) and the array at index {i} has {x.ndim} "
                              f"dimension(s) (shapes {xs[0].shape} and {x.shape})",
                              "give them the same number of dimensions (x[None], reshape) or "
                              "use np.hstack / np.stack")
        for d, (n, m) in enumerate(zip(xs[0].shape, x.shape)):
            if d != axis and n != m:
                raise numpy_error(ValueError, "all the input array dimensions except for the "
                                  f"concatenation axis must match exactly, but along "
                                  f"dimension {d}, the array at index 0 has size {n} and the "
                                  f"array at index {i} has size {m} (shapes {xs[0].shape} and "
                                  f"{x.shape}, axis={axis})",
                                  "check the shapes and the axis (axis=-1 joins the last one)")
    if len(xs) == 1:
        return xs[0]
    return emit(xs[0]._trace, ops.concatenate, xs, axis=axis)


def stack(xs, axis=0):
    if len(xs) == 0:
        raise numpy_error(ValueError, "need at least one array to stack",
                          "pass a non-empty list of arrays")
    xs = lift_all(*xs)
    if len({x.shape for x in xs}) != 1:
        raise numpy_error(ValueError, "all input arrays must have the same shape, got "
                          + ", ".join(str(x.shape) for x in xs),
                          "np.stack adds a new axis; to join along an existing one, use "
                          "np.concatenate")
    axis = normalize_axis(axis, xs[0].ndim + 1)
    return concatenate([expand_dims(x, axis) for x in xs], axis)


def flip(x, axis=None):
    x = lift(x)
    axes = normalize_axes(axis, x.ndim)
    axes = tuple(a for a in axes if x.shape[a] > 1)
    if not axes:
        return x
    return emit(x._trace, ops.rev, [x], weak=x._weak, dims=axes)


def slice_(x, starts, stops, steps) -> Tracer:
    x = lift(x)
    if tuple(starts) == (0,) * x.ndim and tuple(stops) == x.shape and set(steps) <= {1}:
        return x
    return emit(x._trace, ops.slice, [x], weak=x._weak, starts=starts, stops=stops,
                steps=steps)


def pad(x, pad_width, mode="constant", constant_values=0):
    x = lift(x)
    if mode != "constant":
        raise unsupported(f"np.pad(mode={mode!r})", "use mode='constant'")
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    if not np.isscalar(constant_values) and np.ndim(constant_values) != 0:
        raise unsupported("np.pad with per-axis constant_values", "pass one scalar")
    value = convert(lift(constant_values, x._trace), dt(x))
    if not widths.any():
        return x
    return emit(x._trace, ops.pad, [x, value], weak=x._weak, low=widths[:, 0].tolist(),
                high=widths[:, 1].tolist(), interior=[0] * x.ndim)


# ---------------------------------------------------------------------------------------------
# Arrays made from a shape


def iota(shape, dim, dtype=dtypes.int64, trace=None) -> Tracer:
    return emit(trace or current_trace(), ops.iota, [], shape=tuple(shape), dim=dim,
                dtype=dtype)


def full(shape, value, dtype=None, trace=None) -> Tracer:
    trace = trace or current_trace()
    if isinstance(value, Tracer):
        v = value if dtype is None else astype(value, dtype)
        return broadcast_to(v, shape)
    arr = np.asarray(value, dtype=None if dtype is None else requested_dtype(dtype).np)
    return broadcast_to(constant(arr, trace=trace), tuple(shape))
