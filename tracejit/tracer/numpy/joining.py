"""Joining and splitting arrays: NumPy's hstack, vstack, dstack, column_stack, atleast_Nd,
split and array_split, written with concatenate, reshape and slices.

Kept apart from shapes.py because these carry NumPy's per-function rules (which axis each
stacks along, how 0-d and 1-d inputs are promoted, ``dtype``/``casting``).
"""
from __future__ import annotations

import numpy as np

from ..errors import numpy_error
from .lifting import astype, concatenate, expand_dims, lift, lift_all, reshape
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
    if isinstance(indices_or_sections, (int, np.integer)):
        if n % indices_or_sections:
            raise numpy_error(ValueError, f"array split does not result in an equal division: "
                              f"{n} into {indices_or_sections}", "use np.array_split")
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + [min(int(i), n) for i in indices_or_sections] + [n]
    outs = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        starts = [0] * x.ndim
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
    if not isinstance(indices_or_sections, (int, np.integer)):
        return split(x, indices_or_sections, axis)
    n, k = x.shape[normalize_axis(axis, x.ndim)], int(indices_or_sections)
    sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
    return split(x, np.cumsum(sizes)[:-1].tolist(), axis)


def append(arr, values, axis=None):
    """np.append: flattened when ``axis`` is None, else a concatenate along it."""
    if axis is None:
        return concatenate([reshape(lift(arr), (-1,)), reshape(lift(values), (-1,))], 0)
    return concatenate([lift(arr), lift(values)], axis)
