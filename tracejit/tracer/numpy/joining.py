"""Joining and splitting arrays: NumPy's hstack, vstack, dstack, column_stack, atleast_Nd,
split and array_split, written with concatenate, reshape and slices.

Kept apart from shapes.py because these carry NumPy's per-function rules (which axis each
stacks along, how 0-d and 1-d inputs are promoted, ``dtype``/``casting``).
"""
from __future__ import annotations

import numpy as np

from ..errors import numpy_error
from .lifting import (astype, concatenate, expand_dims, lift, lift_all, lift_arrays, reshape,
                      static_ints)
from .rules import abstract, normalize_axis
from .shapes import slice_


def with_dtype_and_casting(f):
    """concatenate/stack/hstack/vstack with NumPy's ``dtype`` and ``casting``: the inputs are
    cast first (dropping the keywords would return another dtype than NumPy)."""
    def g(arrays, *args, dtype=None, casting="same_kind", **kw):
        if dtype is not None:
            arrays = [_cast(a, dtype, casting) for a in arrays]
        return f(arrays, *args, **kw)
    return g


def _cast(a, dtype, casting):
    src = abstract(a)[0].np
    if not np.can_cast(src, np.dtype(dtype), casting):
        raise numpy_error(TypeError, f"Cannot cast array data from {src!r} to "
                          f"{np.dtype(dtype)!r} according to the rule {casting!r}",
                          "pass casting='unsafe' or convert the inputs with .astype(...)")
    return astype(a, dtype)


def hstack(tup):
    xs = [np.atleast_1d(x) if not hasattr(x, "_trace") else x for x in tup]
    xs = [reshape(x, (1,)) if lift(x).ndim == 0 else x for x in xs]
    return concatenate(xs, axis=0 if lift(xs[0]).ndim == 1 else 1)


def vstack(tup):
    xs = [lift(x) for x in lift_all(*tup)]
    xs = [reshape(x, (1, -1)) if x.ndim <= 1 else x for x in xs]
    return concatenate(xs, axis=0)


def dstack(tup):
    xs = [reshape(x, (1, -1, 1)) if x.ndim <= 1 else (expand_dims(x, -1) if x.ndim == 2
                                                       else x) for x in lift_all(*tup)]
    return concatenate(xs, axis=2)


def column_stack(tup):
    xs = [reshape(x, (-1, 1)) if x.ndim < 2 else x for x in lift_all(*tup)]
    return concatenate(xs, axis=1)


def atleast(n):
    """np.atleast_1d, atleast_2d, atleast_3d."""
    def g(*arys):
        outs = []
        for a in arys:
            a = lift(a)
            if a.ndim < n:
                shape = {1: (1,), 2: (1, 1), 3: (1, 1, 1)}[n] if a.ndim == 0 else (
                    (1,) + a.shape if n == 2 else ((1,) + a.shape + (1,) if a.ndim == 1
                                                   else a.shape + (1,)))
                a = reshape(a, shape)
            outs.append(a)
        return outs[0] if len(outs) == 1 else outs
    return g


def split(ary, indices_or_sections, axis=0):
    x = lift(ary)
    axis = normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if np.ndim(indices_or_sections) == 0:
        indices_or_sections = static_ints(indices_or_sections)[0]
    if isinstance(indices_or_sections, (int, np.integer)):
        if n % indices_or_sections:
            raise numpy_error(ValueError, f"array split does not result in an equal division: "
                              f"{n} into {indices_or_sections}", "use np.array_split")
        return array_split(x, indices_or_sections, axis)
    bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    outs = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        a, b, _ = slice(a, b).indices(n)    # x[a:b], as NumPy: a negative point counts from
        starts = [0] * x.ndim               # the end, one past the end is clipped
        stops = list(x.shape)
        starts[axis], stops[axis] = a, max(a, b)
        outs.append(slice_(x, starts, stops, [1] * x.ndim))
    return outs


def hsplit(ary, indices_or_sections):
    x = lift(ary)
    if x.ndim == 0:
        raise numpy_error(ValueError, "hsplit only works on arrays of 1 or more dimensions",
                          "pass an array of at least 1 dimension")
    return split(x, indices_or_sections, 1 if x.ndim > 1 else 0)


def splitter(axis, min_ndim, name):
    """np.vsplit (axis 0, 2-d and up) and np.dsplit (axis 2, 3-d and up)."""
    def g(ary, indices_or_sections):
        x = lift(ary)
        if x.ndim < min_ndim:
            raise numpy_error(ValueError, f"{name} only works on arrays of {min_ndim} or "
                              "more dimensions", "pass an array of more dimensions")
        return split(x, indices_or_sections, axis)
    return g


def array_split(ary, indices_or_sections, axis=0):
    x = lift(ary)
    if np.ndim(indices_or_sections) == 0:
        indices_or_sections = static_ints(indices_or_sections)[0]
    if not isinstance(indices_or_sections, (int, np.integer)):
        return split(x, indices_or_sections, axis)
    n, k = x.shape[normalize_axis(axis, x.ndim)], int(indices_or_sections)
    if k <= 0:
        raise numpy_error(ValueError, "number sections must be larger than 0.",
                          "pass a positive number of sections")
    sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
    return split(x, np.cumsum(sizes)[:-1].tolist(), axis)


def append(arr, values, axis=None):
    """np.append: flattened when ``axis`` is None, else a concatenate along it, of both as
    np.asarray makes them (np.append(float32 array, 0.1) is float64)."""
    arr, values = lift_arrays(arr, values)
    if axis is None:
        return concatenate([reshape(arr, (-1,)), reshape(values, (-1,))], 0)
    return concatenate([arr, values], axis)


def block(arrays):
    """np.block: nested lists joined innermost along the last axis, each level out along the
    axis before; every array first given the nesting depth's number of dimensions."""
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list)
                                                                   else 0)
    if isinstance(arrays, tuple):
        raise numpy_error(TypeError, "arrays is a tuple. Only lists can be used to arrange "
                          "blocks, and np.block does not allow implicit conversion from tuple "
                          "to ndarray.", "use lists for the nesting")
    levels = depth(arrays)
    leaves = []

    def collect(x):
        if isinstance(x, list):
            for y in x:
                collect(y)
        else:
            leaves.append(x)
    collect(arrays)
    nd = max([levels] + [lift_all(*leaves)[i].ndim for i in range(len(leaves))])

    def join(x, level):
        if not isinstance(x, list):
            x = lift_all(x, *leaves)[0]
            return reshape(x, (1,) * (nd - x.ndim) + x.shape)
        if not x:
            raise numpy_error(ValueError, "List at arrays has an empty list", "remove it")
        return concatenate([join(y, level + 1) for y in x], axis=-(levels - level))
    return join(arrays, 0)


def unstack(x, /, *, axis=0):
    """np.unstack (NumPy 2.1): the slices along ``axis``, as a tuple of views of ``x`` (a
    write into one reaches ``x``, as in NumPy)."""
    x = lift(x)
    if x.ndim == 0:
        raise numpy_error(ValueError, "Input array must be at least 1-d.", "pass an array")
    axis = normalize_axis(axis, x.ndim)
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """np.apply_along_axis by tracing ``func1d`` once per 1-D slice (a Python loop over the
    other axes' positions, unrolled into the trace), the results stacked where the axis was;
    a loop over many slices makes a long trace: a vectorized form is faster to compile."""
    from .gather import take
    from .lifting import stack
    x = lift(arr)
    axis = normalize_axis(axis, x.ndim)
    moved = [i for i in range(x.ndim) if i != axis] + [axis]
    from .shapes import transpose
    xt = transpose(x, moved)
    outer = xt.shape[:-1]
    if 0 in outer:
        raise numpy_error(ValueError, "Cannot apply_along_axis when any iteration dimensions "
                          "are 0", "pass a non-empty array")
    results = []
    for pos in np.ndindex(*outer):
        row = xt
        for i in pos:
            row = take(row, i, 0)
        results.append(lift(func1d(row, *args, **kwargs), x._trace))
    res = stack(results, 0)
    res = reshape(res, outer + results[0].shape)
    # the result's own axes go where ``axis`` was
    nr = results[0].ndim
    k = len(outer)
    order = list(range(axis)) + list(range(k, k + nr)) + list(range(axis, k))
    return transpose(res, order)


def apply_over_axes(func, a, axes):
    """np.apply_over_axes: func(a, axis) for each axis in turn, the result given its
    dimension back when func drops it."""
    from .lifting import expand_dims as expand
    val = lift(a)
    n = val.ndim
    for axis in np.atleast_1d(axes).tolist():
        axis = axis + n if axis < 0 else axis
        res = lift(func(val, axis), val._trace)
        if res.ndim == val.ndim:
            val = res
        elif res.ndim == val.ndim - 1:
            val = expand(res, axis)
        else:
            raise numpy_error(ValueError, "function is not returning an array of the correct "
                              "shape", "return an array of the same or one fewer dimension")
    return val
