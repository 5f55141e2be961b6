"""Shape and layout ops on Tracers: transpose and axis moves, squeeze, flip and slices, and the
arrays made from a shape (iota, full, zeros_like, ...). np.pad is in padding.py.

These move, repeat or pad elements and never compute with them. reshape, broadcast_to,
expand_dims, concatenate and stack live in lifting.py (lifting needs them); joining and
splitting arrays in joining.py.
"""
from __future__ import annotations

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error, unsupported
from ..trace_state import current_trace
from ..tracer import Tracer
from ..views import in_order, proxy
from .lifting import (astype, broadcast_to, constant, emit, lift, lift_all, note_python_int,
                      reshape)
from .rules import normalize_axes, normalize_axis, requested_dtype, whole_if_0d


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
    if whole_if_0d(axis, x.ndim) is None:
        axes = [i for i, n in enumerate(x.shape) if n == 1]
    else:
        axes = normalize_axes(axis, x.ndim)
        if any(x.shape[a] != 1 for a in axes):
            raise numpy_error(ValueError, "cannot select an axis to squeeze out which has "
                              f"size not equal to one: axis {axis} of shape {x.shape}",
                              "squeeze only axes of size 1, or call squeeze() without axis")
    return reshape(x, [n for i, n in enumerate(x.shape) if i not in axes])


def flip(x, axis=None):
    x = lift(x)
    axes = normalize_axes(axis, x.ndim)
    axes = tuple(a for a in axes if x.shape[a] > 1)
    if not axes and x.ndim == 0:
        return Tracer(x._value, x._trace, x._weak)     # NumPy's x[()]: a scalar, not x
    if not axes:
        return x
    return emit(x._trace, ops.rev, [x], weak=x._weak, dims=axes)


def rot90(m, k=1, axes=(0, 1)):
    """np.rot90: flips and a transpose, as NumPy writes it."""
    m = lift(m)
    if len(axes) != 2:
        raise numpy_error(ValueError, "len(axes) must be 2.", "pass two axes")
    a0, a1 = (normalize_axis(a, m.ndim) for a in axes)
    if a0 == a1:
        raise numpy_error(ValueError, "Axes must be different.", "pass two different axes")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


def slice_(x, starts, stops, steps) -> Tracer:
    x = lift(x)
    if tuple(starts) == (0,) * x.ndim and tuple(stops) == x.shape and set(steps) <= {1}:
        return x
    return emit(x._trace, ops.slice, [x], weak=x._weak, starts=starts, stops=stops,
                steps=steps)


def broadcast_arrays(*args, subok=False):
    xs = lift_all(*args)
    shape = np.broadcast_shapes(*(x.shape for x in xs))
    return tuple(broadcast_to(x, shape) for x in xs)


# ---------------------------------------------------------------------------------------------
# Arrays made from a shape


def iota(shape, dim, dtype=dtypes.int64, trace=None) -> Tracer:
    return emit(trace or current_trace(), ops.iota, [], shape=tuple(shape), dim=dim,
                dtype=dtype)


def full(shape, value, dtype=None, trace=None) -> Tracer:
    trace = trace or current_trace()
    if isinstance(value, Tracer):
        if dtype is None:       # NumPy's array of a Python number is strong (np.full(3, s))
            v = value if not value._weak else Tracer(value._value, value._trace, False)
        else:                   # a Python int that does not fit is NumPy's OverflowError
            note_python_int(value, requested_dtype(dtype))
            v = astype(value, dtype)
        return broadcast_to(v, shape)
    arr = np.asarray(value, dtype=None if dtype is None else requested_dtype(dtype).np)
    return broadcast_to(constant(arr, trace=trace), tuple(shape))


def filled_like(value):
    """np.zeros_like, np.ones_like, np.empty_like (zeros): ``value`` in ``a``'s shape."""
    def like(a, dtype=None, order="K", subok=True, shape=None, **kw):
        a = lift(a)
        shape = a.shape if shape is None else shape
        return full(shape, np.asarray(value, dtype=dtype or a.dtype), trace=a._trace)
    return like


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    a = lift(a)
    shape = a.shape if shape is None else shape
    if hasattr(fill_value, "_trace"):
        return full(shape, fill_value, dtype or a.dtype)
    return full(shape, np.asarray(fill_value, dtype=dtype or a.dtype), trace=a._trace)


def ravel(x, order="C") -> Tracer:
    """NumPy's ravel: a view only of an array contiguous in ``order`` (a 1-D strided one
    is copied too, where ``reshape(-1)`` would be a view)."""
    x = lift(x)
    order = (order or "C").upper()
    if order not in ("C", "F", "A", "K"):
        raise numpy_error(ValueError, f"order must be one of 'C', 'F', 'A', or 'K' (got "
                          f"{order!r})", "pass one of those")
    perm = None
    # "F" reads the array in Fortran order, "A" a Fortran-contiguous one too, "K" in memory
    # order (_keep_order): the transpose that makes that order C order
    if order == "F" or (order == "A" and in_order(x, "F") and not in_order(x, "C")):
        perm = list(reversed(range(x.ndim)))
    elif order == "K" and not in_order(x, "C"):
        perm = _keep_order(x.shape, proxy(x).strides)
    if perm is not None and perm != list(range(x.ndim)):
        x = transpose(x, perm)
    if x.ndim and not in_order(x, "C"):
        x = Tracer(x._value, x._trace, x._weak)          # a copy: a new root on the value
    return reshape(x, (-1,))


def reshape_in_order(x, shape, order="C") -> Tracer:
    """np.reshape and x.reshape with NumPy's ``order``: "F" reads and places the elements in
    Fortran order, which is the C-order reshape of the transpose, transposed back (a view
    where NumPy's is); "A" is "F" for an array Fortran- but not C-contiguous. (np.reshape
    ignored ``order``, reading a transposed or Fortran-ordered array in C order.)"""
    x = lift(x)
    order = str(order or "C").upper()
    if order == "K":
        raise numpy_error(ValueError, "order 'K' is not permitted for reshaping",
                          "pass order='C', 'F' or 'A'")
    if order not in ("C", "F", "A"):
        raise numpy_error(ValueError, f"order must be one of 'C', 'F', 'A', or 'K' (got "
                          f"{order!r})", "pass one of those")
    if order == "A":
        order = "F" if in_order(x, "F") and not in_order(x, "C") else "C"
    if order == "F":
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return transpose(reshape(transpose(x), shape[::-1]))
    return reshape(x, shape)


def _keep_order(shape, strides) -> list:
    """The axes, outermost first, in the order NumPy's order="K" reads an array of these
    strides: its iterator's (nditer's npyiter_find_best_axis_ordering, for one operand), an
    insertion sort from the innermost axis by decreasing stride magnitude in which an axis of
    stride 0 or size 1 is never compared (it stays where it is unless another axis moves past
    it). An axis of negative stride is read in its own direction ("reversing the data when
    strides are negative"). Sorting by stride alone ordered x[::-1].T and broadcast views
    otherwise than NumPy."""
    step = [0 if n == 1 else abs(s) for n, s in zip(shape, strides)]
    perm = list(reversed(range(len(shape))))
    for i in range(1, len(perm)):
        at, d = i, perm[i]
        for j in range(i - 1, -1, -1):
            if step[d] and step[perm[j]]:
                if step[perm[j]] <= step[d]:
                    break
                at = j
        perm.insert(at, perm.pop(i))
    return perm[::-1]


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """np.meshgrid: each input raveled onto its own axis (the first two swapped for "xy"),
    broadcast against the others unless ``sparse``; a tuple, as NumPy 2 returns."""
    if indexing not in ("xy", "ij"):
        raise numpy_error(ValueError, "Valid values for `indexing` are 'xy' and 'ij'.",
                          "pass indexing='xy' or 'ij'")
    ndim = len(xi)
    s0 = (1,) * ndim
    trace = next((x._trace for x in xi if isinstance(x, Tracer)), None)
    out = [reshape(lift(x, trace), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        out[0] = reshape(out[0], (1, -1) + s0[2:])
        out[1] = reshape(out[1], (-1, 1) + s0[2:])
    if not sparse:
        out = list(broadcast_arrays(*out))
    return tuple(out)


def ix_(*args):
    """np.ix_: each 1-D integer sequence reshaped onto its own axis, ``(1, .., n, .., 1)``,
    an open mesh for ``A[np.ix_(rows, cols)]``. A boolean one stands for its np.nonzero,
    whose size depends on the data: refused."""
    trace = next((x._trace for x in args if isinstance(x, Tracer)), None)
    n, out = len(args), []
    for k, a in enumerate(args):
        x = lift(a, trace)
        if x.ndim != 1:
            raise numpy_error(ValueError, "Cross index must be 1 dimensional",
                              "pass 1-D index sequences to np.ix_")
        if x.dtype.kind == "b":
            raise unsupported("np.ix_ of a boolean mask (its np.nonzero's size depends on the "
                              "data)", "pass the indices, or keep the shape with np.where")
        if x.dtype.kind not in "iu":
            raise numpy_error(IndexError, "arrays used as indices must be of integer (or "
                              "boolean) type", "pass integer indices to np.ix_")
        out.append(reshape(x, (1,) * k + (-1,) + (1,) * (n - k - 1)))
    return tuple(out)


def rollaxis(a, axis, start=0):
    """np.rollaxis: ``axis`` moved to before position ``start`` (NumPy's rules for start)."""
    x = lift(a)
    n = x.ndim
    axis = normalize_axis(axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise numpy_error(np.exceptions.AxisError, f"start arg requires {-n} <= start < "
                          f"{n + 1}", "pass a start within the array's axes")
    if axis < start:
        start -= 1
    if axis == start:
        return x
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return transpose(x, order)
