"""``x[key]`` on a Tracer: static basic indexing becomes slice/rev/reshape ops, integer-array
indexing becomes a ``take`` (gather), following NumPy's rules for where the indexed axes go; a
traced boolean mask alone gives a ``masked.Selection`` (its size depends on the data).

Tracer.__getitem__ reaches ``getitem`` through the table the package registers (__init__.py).
"""
from __future__ import annotations

import numpy as np

from ..errors import ConcretizationError, numpy_error, unsupported, user_location
from ..tracer import Tracer
from ..views import fresh
from .gather import gather_linear
from .lifting import lift, reshape, trace_of
from .masked import select
from .rules import has_tracer
from .shapes import flip, slice_, transpose


def _is_int(k) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def _is_array_index(k) -> bool:
    if isinstance(k, Tracer):
        return True
    if isinstance(k, (list, np.ndarray)):
        return True
    return False


def _out_of_bounds(k, dim: int, n: int) -> IndexError:
    return numpy_error(IndexError, f"index {k} is out of bounds for axis {dim} with size {n}",
                       f"indices must lie in [-{n}, {n}); np.take(x, i, mode='clip' or 'wrap') "
                       "brings them into range")


def getitem(x: Tracer, key):
    if not isinstance(key, tuple):
        key = (key,)
    # x[i] with i of an inner trace (a loop body's index, x closed over): index in that trace,
    # where x is a captured value
    inner = trace_of(x, *(t for k in key for t in (k if isinstance(k, (list, tuple)) else (k,))
                          if isinstance(t, Tracer)))
    if inner is not x._trace:
        x = lift(x, inner)
    # Static boolean masks become integer indices; traced masks have a data-dependent shape.
    expanded = []
    for k in key:
        if isinstance(k, range):
            k = np.arange(k.start, k.stop, k.step)    # NumPy reads a range as a sequence
        if isinstance(k, (list, tuple)) and has_tracer(k):
            k = lift(k, x._trace)       # x[[i, j]] with traced i, j: an index array
        if isinstance(k, Tracer) and k.dtype == np.bool_:
            if len(key) == 1:
                return select(x, k)     # a Selection: what never needs its size (masked.py)
            raise unsupported("a traced boolean mask combined with other indices (the result's"
                              " size depends on the data)", "index with the mask alone, "
                              "x[mask], or keep the shape with np.where(mask, x, 0)")
        if isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim == 0:
            k = k[()]           # a 0-d mask is refused as np.True_ is, below (np.nonzero fails)
        if isinstance(k, (list, np.ndarray)) and np.asarray(k).dtype == np.bool_:
            expanded.extend(np.nonzero(np.asarray(k)))
        elif isinstance(k, Tracer) and not np.issubdtype(k.dtype, np.integer):
            raise numpy_error(IndexError, "arrays used as indices must be of integer type, "
                              f"got {k.dtype}", "convert the index with .astype(np.int64)")
        else:
            expanded.append(k)
    key = expanded
    n_ellipsis = sum(1 for k in key if k is Ellipsis)
    if n_ellipsis > 1:
        raise numpy_error(IndexError, "an index can only have a single ellipsis ('...')",
                          "keep one ... and spell the other axes out with :")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > x.ndim:
        raise numpy_error(IndexError, f"too many indices for array: array is "
                          f"{x.ndim}-dimensional, but {consumed} were indexed",
                          f"index at most {x.ndim} axes (check the shape {x.shape})")
    if n_ellipsis:
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + [slice(None)] * (x.ndim - consumed) + key[i + 1:]
    else:
        key = key + [slice(None)] * (x.ndim - consumed)
    advanced = any(_is_array_index(k) for k in key)

    # Pass 1: slices (with steps) and, without advanced indices, ints.
    starts, stops, steps, flips = [], [], [], []
    out_shape = []            # shape after pass 1 with None inserted
    adv = []                  # (position in the pass-1 result, index) for advanced indices
    dim = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        n = x.shape[dim]
        if isinstance(k, slice):
            if any(isinstance(b, Tracer) for b in (k.start, k.stop, k.step)):
                # (else k.indices called __index__, whose error blamed an untraced array)
                raise ConcretizationError(
                    "A slice with a traced bound (x[i:i + n]: its size and place are "
                    "Python ints)", user_location(),
                    what_to_do="for n elements from a traced i, index with an array: "
                    "x[i + np.arange(n)] (an index out of range is an IndexError; "
                    "x[np.clip(i, 0, len(x) - n) + np.arange(n)] moves the window into "
                    "range, as jax.lax.dynamic_slice does); for a Python int i, pass it "
                    "static (jit's static_argnums, vmap's in_axes=None)")
            start, stop, step = k.indices(n)
            if step < 0:
                # x[a:b:-s] == flip(x)[n-1-a : n-1-b : s]
                start, stop, step = n - 1 - start, n - 1 - stop, -step
                flips.append(dim)
            starts.append(start)
            stops.append(max(stop, start))
            steps.append(step)
            out_shape.append(len(range(start, max(stop, start), step)))
        elif _is_int(k) and not advanced:
            if not -n <= k < n:
                raise _out_of_bounds(k, dim, n)
            k = k % n
            starts.append(k)
            stops.append(k + 1)
            steps.append(1)
        elif _is_int(k) or _is_array_index(k):
            if _is_int(k) and not -n <= k < n:
                raise _out_of_bounds(k, dim, n)
            if not isinstance(k, Tracer):
                arr = np.asarray(k)
                if arr.dtype.kind == "u":
                    arr = arr.astype(np.int64)    # read as intp, as NumPy does: 2**64-1 is -1
                if arr.size and not np.issubdtype(arr.dtype, np.integer):
                    raise numpy_error(IndexError, "arrays used as indices must be of integer "
                                      f"type, got {arr.dtype}",
                                      "convert the index with .astype(np.int64)")
                if arr.size and (arr.min() < -n or arr.max() >= n):
                    raise _out_of_bounds(arr[(arr < -n) | (arr >= n)].flat[0], dim, n)
                k = arr.astype(np.int64)
            starts.append(0)
            stops.append(n)
            steps.append(1)
            adv.append((len(out_shape), k))
            out_shape.append(n)
        else:
            if isinstance(k, (bool, np.bool_)) or (isinstance(k, np.ndarray)
                                                    and k.dtype == np.bool_):
                # valid in NumPy (x[True] adds an axis), not traced here
                raise unsupported(f"an index of type {type(k).__name__}",
                                  "use ints, slices, None, Ellipsis or integer arrays")
            # (NumPy's own error: x["a"] and x[1.5] are no indices there either)
            raise numpy_error(IndexError, "only integers, slices (`:`), ellipsis (`...`), "
                              "numpy.newaxis (`None`) and integer or boolean arrays are valid "
                              f"indices, got {type(k).__name__}",
                              "use ints, slices, None, Ellipsis or integer arrays")
        dim += 1

    y = flip(x, tuple(flips)) if flips else x
    y = slice_(y, starts, stops, steps)
    y = reshape(y, out_shape)
    if not adv:
        # An element (a 0-d result without ...) is a NumPy scalar, a copy; the rest are views.
        return fresh(y, (x,)) if y.ndim == 0 and not n_ellipsis else y
    positions = [p for p, _ in adv]
    indices = [lift(k, y._trace) for _, k in adv]
    contiguous = positions == list(range(positions[0], positions[0] + len(positions)))
    if not contiguous:
        # NumPy puts the indexed dims first when the advanced indices are separated.
        rest = [i for i in range(y.ndim) if i not in positions]
        y = transpose(y, positions + rest)
        positions = list(range(len(positions)))
    return gather_linear(y, indices, positions)
