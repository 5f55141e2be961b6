"""np.gradient: central differences inside, one-sided ones at the edges, as slices and
arithmetic of the traced array (no op of its own, so its derivative and kernels come free).

The code follows NumPy's own line by line, with the same Python and NumPy scalars, so NEP 50
gives the same dtypes and the same roundings: e.g. a float32 ``f`` with spacing 0.5 stays
float32 throughout, with np.float64(0.5) it is computed in float64 and stored as float32.
Spacings are scalars (Python, NumPy or traced) or constant 1-D coordinate arrays. Traced
coordinates are refused: NumPy picks its formula by whether they are evenly spaced, which needs
their values, and selecting between both formulas in the program would give the derivative with
respect to the coordinates of the wrong one (the uniform formula sees only the first spacing).
"""
from __future__ import annotations

import numpy as np

from ..errors import numpy_error, unsupported
from ..tracer import Tracer
from .lifting import astype, concatenate, lift
from .rules import normalize_axis
from .shapes import slice_


def _ndim(v) -> int:
    return v.ndim if isinstance(v, Tracer) else np.ndim(v)


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(normalize_axis(a, ndim) for a in (
        axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes):
        raise numpy_error(ValueError, "repeated axis", "name each axis once")
    return axes


def _spacings(varargs, f, axes) -> list:
    """One spacing per axis: a scalar, or the differences of 1-D coordinates (NumPy's dx)."""
    n = len(varargs)
    if n == 0:
        return [1.0] * len(axes)
    if n == 1 and _ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if n != len(axes):
        raise numpy_error(TypeError, "invalid number of arguments",
                          "give one spacing for all axes, or one per axis")
    dx = []
    for i, d in enumerate(varargs):
        if _ndim(d) == 0:
            dx.append(d)
            continue
        if _ndim(d) != 1:
            raise numpy_error(ValueError, "distances must be either scalars or 1d",
                              "give a scalar spacing or the 1-D coordinates of the axis")
        if len(d) != f.shape[axes[i]]:
            raise numpy_error(ValueError, "when 1d, distances must match the length of the "
                              "corresponding dimension", "give one coordinate per element")
        if isinstance(d, Tracer):
            raise unsupported("np.gradient with traced coordinates (NumPy chooses its formula "
                              "by whether they are evenly spaced, which needs their values)",
                              "pass the coordinates as a NumPy array the function closes over "
                              "(or builds, e.g. with np.linspace), or a scalar spacing")
        d = np.asanyarray(d)
        d = d.astype(np.float64) if np.issubdtype(d.dtype, np.integer) else d
        dd = np.diff(d)
        dx.append(dd[0] if (dd == dd[0]).all() else dd)
    return dx


def _part(f, axis: int, start: int, stop: int):
    """f[..., start:stop, ...] along ``axis`` (negative bounds count from the end)."""
    n = f.shape[axis]
    starts, stops = [0] * f.ndim, list(f.shape)
    starts[axis], stops[axis] = start % n if start < 0 else start, stop % n if stop < 0 else stop
    return slice_(f, starts, stops, [1] * f.ndim)


def _along(c, axis: int, ndim: int):
    """A 1-D coefficient array shaped to broadcast along ``axis`` (NumPy's reshape(shape))."""
    shape = [1] * ndim
    shape[axis] = -1
    return c.reshape(shape)


def _uniform(f, axis, h, edge_order):
    """The pieces (first edge, interior, last edge) for a scalar spacing h."""
    inner = (_part(f, axis, 2, f.shape[axis]) - _part(f, axis, 0, -2)) / (2. * h)
    if edge_order == 1:
        return ((_part(f, axis, 1, 2) - _part(f, axis, 0, 1)) / h, inner,
                (_part(f, axis, -1, f.shape[axis]) - _part(f, axis, -2, -1)) / h)
    first = (-1.5 / h * _part(f, axis, 0, 1) + 2. / h * _part(f, axis, 1, 2)
             + -0.5 / h * _part(f, axis, 2, 3))
    last = (0.5 / h * _part(f, axis, -3, -2) + -2. / h * _part(f, axis, -2, -1)
            + 1.5 / h * _part(f, axis, -1, f.shape[axis]))
    return first, inner, last


def _nonuniform(f, axis, dx, edge_order):
    """The pieces for coordinate differences dx (1-D, one shorter than the axis)."""
    nd = f.ndim
    dx1, dx2 = dx[0:-1], dx[1:]
    a = -(dx2) / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    inner = (_along(a, axis, nd) * _part(f, axis, 0, -2) + _along(b, axis, nd)
             * _part(f, axis, 1, -1) + _along(c, axis, nd) * _part(f, axis, 2, f.shape[axis]))
    if edge_order == 1:
        return ((_part(f, axis, 1, 2) - _part(f, axis, 0, 1)) / dx[0], inner,
                (_part(f, axis, -1, f.shape[axis]) - _part(f, axis, -2, -1)) / dx[-1])
    dx1, dx2 = dx[0], dx[1]
    a = -(2. * dx1 + dx2) / (dx1 * (dx1 + dx2))
    b = (dx1 + dx2) / (dx1 * dx2)
    c = - dx1 / (dx2 * (dx1 + dx2))
    first = a * _part(f, axis, 0, 1) + b * _part(f, axis, 1, 2) + c * _part(f, axis, 2, 3)
    dx1, dx2 = dx[-2], dx[-1]
    a = (dx2) / (dx1 * (dx1 + dx2))
    b = - (dx2 + dx1) / (dx1 * dx2)
    c = (2. * dx2 + dx1) / (dx2 * (dx1 + dx2))
    last = (a * _part(f, axis, -3, -2) + b * _part(f, axis, -2, -1)
            + c * _part(f, axis, -1, f.shape[axis]))
    return first, inner, last


def gradient(f, *varargs, axis=None, edge_order=1):
    """np.gradient: one array per axis (a tuple of them for several axes, as NumPy 2 gives),
    each in f's float dtype (integers: float64)."""
    f = lift(f)
    axes = _axes(axis, f.ndim)
    dx = _spacings(varargs, f, axes)
    if edge_order > 2:
        raise numpy_error(ValueError, "'edge_order' greater than 2 not supported",
                          "use edge_order=1 or 2")
    otype = f.dtype if np.issubdtype(f.dtype, np.inexact) else np.dtype(np.float64)
    if np.issubdtype(f.dtype, np.integer):
        f = astype(f, np.float64)
    outs = []
    for ax, h in zip(axes, dx):
        if f.shape[ax] < edge_order + 1:
            raise numpy_error(ValueError, "Shape of array too small to calculate a numerical "
                              "gradient, at least (edge_order + 1) elements are required.",
                              f"give axis {ax} at least {edge_order + 1} elements")
        if _ndim(h) == 0:
            pieces = _uniform(f, ax, h, edge_order)
        else:
            pieces = _nonuniform(f, ax, h, edge_order)
        pieces = [astype(p, otype) for p in pieces if p.shape[ax]]
        outs.append(concatenate(pieces, ax) if len(pieces) > 1 else pieces[0])
    return outs[0] if len(axes) == 1 else tuple(outs)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """np.trapezoid as NumPy writes it: ``(d * (y[1:] + y[:-1]) / 2.0).sum(axis)``, with d
    the spacing ``dx`` or the differences of ``x`` (1-D along ``axis``, or y's shape)."""
    from .arithmetic import add, diff, multiply, true_divide
    from .lifting import reshape
    from .reductions import sum as sum_
    y = lift(y)
    nd = y.ndim
    axis = normalize_axis(axis, nd)
    if x is None:
        d = dx
    else:
        xv = lift(x, y._trace)
        if xv.ndim == 1:
            d = diff(xv)
            d = reshape(d, tuple(d.shape[0] if i == axis else 1 for i in range(nd)))
        else:
            d = diff(xv, axis=axis)
    n = y.shape[axis]
    upper = slice_(y, [min(1, n) if i == axis else 0 for i in range(nd)], list(y.shape),
                   [1] * nd)
    lower = slice_(y, [0] * nd, [max(n - 1, 0) if i == axis else s for i, s in
                                 enumerate(y.shape)], [1] * nd)
    return sum_(true_divide(multiply(d, add(upper, lower)), 2.0), axis)


def ediff1d(ary, to_end=None, to_begin=None):
    """np.ediff1d: the differences of the flattened array, with ``to_begin`` and ``to_end``
    (cast same_kind to its dtype) around them."""
    from .arithmetic import subtract
    from .lifting import convert, reshape
    from .rules import dt
    a = reshape(lift(ary), (-1,))
    n = a.shape[0]
    parts = [subtract(slice_(a, [min(1, n)], [n], [1]), slice_(a, [0], [max(n - 1, 0)], [1]))]
    for value, where in ((to_begin, 0), (to_end, 1)):
        if value is None:
            continue
        v = lift(value, a._trace)
        if not np.can_cast(v.dtype, a.dtype, casting="same_kind"):
            raise numpy_error(TypeError, f"dtype of `{'to_begin' if where == 0 else 'to_end'}`"
                              " must be compatible with input `ary` under the `same_kind` "
                              "rule.", "convert it to the array's dtype")
        v = convert(reshape(v, (-1,)), dt(a))
        parts.insert(0 if where == 0 else len(parts), v)
    return concatenate(parts, 0) if len(parts) > 1 else convert(parts[0], dt(a))
