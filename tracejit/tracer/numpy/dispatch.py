"""Which implementation each NumPy function gets on Tracers: the ``__array_ufunc__`` table
(UFUNCS, and UFUNC_REDUCE for ``ufunc.reduce``) and the ``__array_function__`` table
(FUNCTIONS), with the two handlers that consult them; and TRACER_METHODS, what Tracer's
operators and methods call (tracejit/tracer/__init__.py hands it to tracer.use_numpy_layer).

The implementations live in the theme modules; entries here only adapt a signature. A NumPy
function missing from these tables raises an error naming it, so unsupported code fails loudly
at trace time instead of computing something else.
"""
from __future__ import annotations

import inspect
import sys

import numpy as np

from ..errors import numpy_error, unsupported
from ..views import fresh, link_readonly, made_as_array
from . import (arithmetic, assignment, einsum, gather, indexing, joining, lifting, linalg,
               linalg_solvers, ranges, math_functions, reductions, scipy_functions, shapes)
from . import accumulations, linalg_decompositions
from . import (conversion, correlation, finite_differences, histogram, order_statistics,
               padding, searching, sorting)
from .masked import Selection

UFUNCS = {
    np.add: arithmetic.add, np.subtract: arithmetic.subtract,
    np.multiply: arithmetic.multiply, np.true_divide: arithmetic.true_divide,
    np.floor_divide: arithmetic.floor_divide, np.remainder: arithmetic.remainder,
    np.divmod: arithmetic.divmod_, np.power: arithmetic.power,
    np.float_power: arithmetic.float_power,
    np.maximum: arithmetic.maximum, np.minimum: arithmetic.minimum,
    np.negative: arithmetic.negative, np.positive: arithmetic.positive,
    np.absolute: arithmetic.absolute, np.fabs: math_functions.fabs, np.sign: arithmetic.sign,
    np.square: arithmetic.square, np.reciprocal: arithmetic.reciprocal,
    np.conjugate: arithmetic.conjugate,
    np.equal: arithmetic.equal, np.not_equal: arithmetic.not_equal, np.less: arithmetic.less,
    np.less_equal: arithmetic.less_equal, np.greater: arithmetic.greater,
    np.greater_equal: arithmetic.greater_equal,
    np.logical_and: arithmetic.logical_and, np.logical_or: arithmetic.logical_or,
    np.logical_xor: arithmetic.logical_xor, np.logical_not: arithmetic.logical_not,
    np.bitwise_and: arithmetic.bitwise_and, np.bitwise_or: arithmetic.bitwise_or,
    np.bitwise_xor: arithmetic.bitwise_xor, np.invert: arithmetic.invert,
    np.left_shift: arithmetic.left_shift, np.right_shift: arithmetic.right_shift,
    np.exp: math_functions.exp, np.exp2: math_functions.exp2, np.expm1: math_functions.expm1,
    np.log: math_functions.log, np.log2: math_functions.log2, np.log10: math_functions.log10,
    np.log1p: math_functions.log1p, np.sqrt: math_functions.sqrt,
    np.sin: math_functions.sin, np.cos: math_functions.cos, np.tan: math_functions.tan,
    np.arcsin: math_functions.arcsin, np.arccos: math_functions.arccos,
    np.arctan: math_functions.arctan, np.arctan2: math_functions.arctan2,
    np.sinh: math_functions.sinh, np.cosh: math_functions.cosh, np.tanh: math_functions.tanh,
    np.arcsinh: math_functions.arcsinh, np.arctanh: math_functions.arctanh,
    np.deg2rad: math_functions.deg2rad, np.radians: math_functions.deg2rad,
    np.rad2deg: math_functions.rad2deg, np.degrees: math_functions.rad2deg,
    np.floor: math_functions.floor, np.ceil: math_functions.ceil,
    np.rint: math_functions.rint, np.trunc: math_functions.trunc,
    np.isnan: math_functions.isnan, np.isinf: math_functions.isinf,
    np.isfinite: math_functions.isfinite,
    np.fmax: math_functions.fmax, np.fmin: math_functions.fmin,
    np.logaddexp: math_functions.logaddexp, np.hypot: math_functions.hypot,
    np.copysign: math_functions.copysign, np.fmod: math_functions.fmod,
    np.heaviside: math_functions.heaviside, np.signbit: math_functions.signbit,
    np.cbrt: math_functions.cbrt, np.modf: math_functions.modf, np.ldexp: math_functions.ldexp,
    np.frexp: math_functions.frexp,
    np.matmul: linalg.matmul, np.vecdot: linalg.vecdot,
    np.arccosh: math_functions.arccosh, np.logaddexp2: math_functions.logaddexp2,
    **({np.matvec: lambda a, b: linalg.matmul(a, lifting.expand_dims(b, -1))[..., 0],
        np.vecmat: lambda a, b: linalg.matmul(lifting.expand_dims(a, -2), b)[..., 0, :]}
       if hasattr(np, "matvec") else {}),
}

UFUNC_REDUCE = {
    np.add: reductions.sum, np.multiply: reductions.prod, np.maximum: reductions.amax,
    np.minimum: reductions.amin, np.logical_and: reductions.all, np.logical_or: reductions.any,
}
UFUNC_ACCUMULATE = {np.add: reductions.cumsum, np.multiply: reductions.cumprod,
                    np.maximum: accumulations.cummax, np.minimum: accumulations.cummin}

def refusing(what, hint):
    """A FUNCTIONS entry that refuses a call with ``hint`` (at the user's line)."""
    def refuse(*args, **kwargs):
        raise unsupported(what, hint)
    return refuse


FUNCTIONS = {
    # reductions and statistics
    np.sum: reductions.numpy_reduction(reductions.sum),
    np.prod: reductions.numpy_reduction(reductions.prod),
    np.cumsum: lambda a, axis=None, dtype=None, out=None: reductions.cumsum(a, axis, dtype),
    np.cumprod: lambda a, axis=None, dtype=None, out=None: reductions.cumprod(a, axis, dtype),
    np.mean: reductions.numpy_reduction(reductions.mean),
    np.var: reductions.numpy_var(reductions.var), np.std: reductions.numpy_var(reductions.std),
    np.max: reductions.numpy_minmax(reductions.amax),
    np.amax: reductions.numpy_minmax(reductions.amax),
    np.min: reductions.numpy_minmax(reductions.amin),
    np.amin: reductions.numpy_minmax(reductions.amin),
    np.all: reductions.numpy_minmax(reductions.all),
    np.any: reductions.numpy_minmax(reductions.any),
    np.argmax: reductions.numpy_arg(reductions.argmax),
    np.argmin: reductions.numpy_arg(reductions.argmin),
    np.average: reductions.average, np.count_nonzero: reductions.count_nonzero,
    np.ptp: reductions.ptp,
    np.nansum: reductions.numpy_reduction(reductions.nansum),
    np.nanprod: reductions.numpy_reduction(reductions.nanprod),
    np.nanmean: reductions.numpy_reduction(reductions.nanmean),
    np.nancumsum: lambda a, axis=None, dtype=None, out=None: reductions.nancumsum(a, axis,
                                                                                 dtype),
    np.nancumprod: lambda a, axis=None, dtype=None, out=None: reductions.nancumprod(a, axis,
                                                                                   dtype),
    np.nanvar: reductions.numpy_var(reductions.nanvar),
    np.nanstd: reductions.numpy_var(reductions.nanstd),
    np.nanmax: reductions.numpy_minmax(reductions.nanmax),
    np.nanmin: reductions.numpy_minmax(reductions.nanmin),
    np.nanargmax: reductions.numpy_arg(reductions.nanargmax),
    np.nanargmin: reductions.numpy_arg(reductions.nanargmin),
    # shapes
    np.reshape: lambda a, shape=None, order="C", **kw: shapes.reshape_in_order(
        a, kw.get("newshape", shape), order),
    np.ravel: shapes.ravel,
    np.transpose: lambda a, axes=None: shapes.transpose(a, axes),
    np.matrix_transpose: lambda x, /: shapes.swapaxes(x, -1, -2),
    np.swapaxes: shapes.swapaxes, np.moveaxis: shapes.moveaxis,
    np.squeeze: lambda a, axis=None: shapes.squeeze(a, axis),
    np.expand_dims: lifting.expand_dims,
    np.broadcast_to: lambda a, shape, subok=False: lifting.broadcast_to(
        a, (shape,) if isinstance(shape, int) else shape),
    np.broadcast_arrays: shapes.broadcast_arrays,
    np.flip: lambda m, axis=None: shapes.flip(m, axis),
    np.fliplr: lambda m: shapes.flip(m, 1), np.flipud: lambda m: shapes.flip(m, 0),
    np.rot90: shapes.rot90, np.append: joining.append, np.linspace: ranges.linspace,
    np.meshgrid: shapes.meshgrid, np.ix_: shapes.ix_,
    np.lib.stride_tricks.sliding_window_view: gather.sliding_window_view,
    np.pad: padding.pad,
    np.zeros_like: shapes.filled_like(0), np.ones_like: shapes.filled_like(1),
    np.empty_like: shapes.filled_like(0), np.full_like: shapes.full_like,
    np.astype: lambda x, dtype, /, *, copy=True, device=None: lifting.lift(x).astype(
        dtype, copy=copy),
    # (np.array's copy: np.copy(x, order="F") is laid out in Fortran order, as NumPy's)
    np.copy: lambda a, order="K", subok=False: conversion.array(a, order=order),
    np.shape: lambda a: lifting.lift(a).shape, np.ndim: lambda a: lifting.lift(a).ndim,
    np.size: lambda a, axis=None: (lifting.lift(a).size if axis is None
                                   else lifting.lift(a).shape[axis]),
    np.result_type: lambda *xs: np.result_type(*(x.dtype if hasattr(x, "_trace") else x
                                                 for x in xs)),
    # (a traced array is never complex: tracejit has no complex dtypes)
    np.iscomplexobj: lambda x: False, np.isrealobj: lambda x: True,
    np.can_cast: lambda from_, to, casting="safe": np.can_cast(
        from_.dtype if hasattr(from_, "_trace") else from_, to, casting),
    # joining and splitting
    np.concatenate: joining.with_dtype_and_casting(
        lambda arrays, axis=0, out=None: lifting.concatenate(arrays, axis)),
    np.stack: joining.with_dtype_and_casting(
        lambda arrays, axis=0, out=None: lifting.stack(arrays, axis)),
    np.hstack: joining.with_dtype_and_casting(joining.hstack),
    np.vstack: joining.with_dtype_and_casting(joining.vstack),
    np.dstack: joining.dstack, np.column_stack: joining.column_stack,
    np.atleast_1d: joining.atleast(1), np.atleast_2d: joining.atleast(2),
    np.atleast_3d: joining.atleast(3),
    np.split: joining.split, np.array_split: joining.array_split,
    np.hsplit: joining.hsplit, np.vsplit: joining.splitter(0, 2, "vsplit"),
    np.dsplit: joining.splitter(2, 3, "dsplit"),
    # elementwise
    np.where: arithmetic.where_function, np.select: arithmetic.select,
    np.clip: lambda a, a_min=np._NoValue, a_max=np._NoValue, out=None, **kw: arithmetic.clip(
        a, *(None if v is np._NoValue else v
             for v in (kw.get("min", a_min), kw.get("max", a_max)))),
    np.diff: arithmetic.diff, np.abs: arithmetic.absolute,
    np.round: lambda a, decimals=0, out=None: math_functions.round_(a, decimals),
    np.around: lambda a, decimals=0, out=None: math_functions.round_(a, decimals),
    np.isclose: math_functions.isclose, np.nan_to_num: math_functions.nan_to_num,
    np.allclose: reductions.allclose, np.fix: math_functions.fix,
    # gathers
    np.take: lambda a, indices, axis=None, out=None, mode="raise": gather.take(
        a, indices, axis, mode),
    np.take_along_axis: lambda arr, indices, axis: gather.take_along_axis(arr, indices, axis),
    # sorting, finite differences, conversions (np.array and its kin: see conversion.py)
    np.sort: sorting.sort, np.argsort: sorting.argsort, np.gradient: finite_differences.gradient,
    np.median: order_statistics.median, np.quantile: order_statistics.quantile,
    np.percentile: order_statistics.percentile,
    np.nanmedian: order_statistics.nanmedian, np.nanquantile: order_statistics.nanquantile,
    np.nanpercentile: order_statistics.nanpercentile,
    np.searchsorted: lambda a, v, side="left", sorter=None: searching.searchsorted(a, v, side,
                                                                                sorter),
    np.digitize: searching.digitize, np.interp: searching.interp, np.isin: searching.isin,
    np.histogram: histogram.histogram, np.histogram_bin_edges: histogram.histogram_bin_edges,
    np.bincount: histogram.bincount, np.trapezoid: finite_differences.trapezoid,
    np.ediff1d: finite_differences.ediff1d,
    np.array: conversion.array, np.asarray: conversion.asarray,
    np.asanyarray: conversion.asarray, np.ascontiguousarray: conversion.ascontiguousarray,
    np.asfortranarray: conversion.asfortranarray,
    np.repeat: gather.repeat, np.tile: gather.tile, np.roll: gather.roll,
    np.unravel_index: gather.unravel_index,
    # linear algebra
    np.dot: lambda a, b, out=None: linalg.dot(a, b), np.vdot: linalg.vdot,
    np.inner: linalg.inner, np.outer: lambda a, b, out=None: linalg.outer(a, b),
    np.tensordot: lambda a, b, axes=2: linalg.tensordot(a, b, axes),
    np.einsum: einsum.einsum,
    np.linalg.norm: linalg.norm, np.linalg.vector_norm: linalg.vector_norm,
    np.diagonal: linalg.diagonal, np.diag: linalg.diag, np.trace: linalg.trace,
    np.triu: linalg.triangle(True), np.tril: linalg.triangle(False),
    np.diagflat: linalg.diagflat, np.cross: linalg.cross, np.convolve: correlation.convolve,
    np.cov: correlation.cov, np.corrcoef: correlation.corrcoef,
    np.kron: linalg.kron, np.correlate: correlation.correlate, np.vander: linalg.vander,
    np.polyval: linalg.polyval, np.triu_indices_from: linalg.triangle_indices_from(True),
    np.tril_indices_from: linalg.triangle_indices_from(False),
    np.linalg.solve: linalg_solvers.solve, np.linalg.inv: linalg_solvers.inv,
    np.linalg.cholesky: linalg_solvers.cholesky, np.linalg.slogdet: linalg_solvers.slogdet,
    np.linalg.det: linalg_solvers.det,
    np.linalg.eigh: linalg_decompositions.eigh,
    np.linalg.eigvalsh: linalg_decompositions.eigvalsh,
    np.linalg.svd: linalg_decompositions.svd, np.linalg.qr: linalg_decompositions.qr,
    np.linalg.matrix_rank: linalg_decompositions.matrix_rank,
    np.linalg.pinv: linalg_decompositions.pinv, np.linalg.cond: linalg_decompositions.cond,
    **({np.linalg.svdvals: linalg_decompositions.svdvals} if hasattr(np.linalg, "svdvals")
       else {}),
    # np.linalg's array-API spellings, over the last two axes where the np.* ones take 0 and 1
    np.linalg.matmul: linalg.matmul,
    np.linalg.vecdot: lambda x1, x2, /, *, axis=-1: linalg.vecdot(x1, x2, axis),
    np.linalg.outer: linalg.outer_of_vectors,
    np.linalg.tensordot: lambda a, b, /, *, axes=2: linalg.tensordot(a, b, axes),
    np.linalg.diagonal: lambda x, /, *, offset=0: linalg.diagonal(x, offset, -2, -1),
    np.linalg.trace: lambda x, /, *, offset=0, dtype=None: linalg.trace(x, offset, -2, -1,
                                                                       dtype),
    np.linalg.matrix_transpose: lambda x, /: shapes.swapaxes(x, -1, -2),
    np.linalg.matrix_norm: lambda x, /, *, keepdims=False, ord="fro": linalg.norm(
        x, ord, (-2, -1), keepdims),
    # writing into arrays
    np.copyto: assignment.copyto, np.fill_diagonal: assignment.fill_diagonal,
    np.put_along_axis: assignment.put_along_axis, np.put: assignment.put,
    np.putmask: assignment.putmask, np.place: assignment.place,
    # more functions with shapes known before the data
    np.rollaxis: shapes.rollaxis, np.resize: gather.resize, np.compress: gather.compress,
    np.delete: gather.delete, np.insert: gather.insert, np.choose: gather.choose,
    np.ravel_multi_index: gather.ravel_multi_index,
    np.block: joining.block, np.apply_along_axis: joining.apply_along_axis,
    np.apply_over_axes: joining.apply_over_axes, np.piecewise: arithmetic.piecewise,
    np.partition: sorting.partition, np.argpartition: sorting.argpartition,
    np.lexsort: sorting.lexsort,
    np.logspace: ranges.logspace, np.geomspace: ranges.geomspace,
    np.linalg.multi_dot: linalg.multi_dot, np.linalg.matrix_power: linalg.matrix_power,
    np.sinc: math_functions.sinc, np.isposinf: math_functions.isposinf,
    np.isneginf: math_functions.isneginf,
    np.real: math_functions.real, np.imag: math_functions.imag,
    np.isreal: math_functions.isreal, np.iscomplex: math_functions.iscomplex,
    np.real_if_close: lambda a, tol=100: lifting.lift(a), np.angle: math_functions.angle,
    np.array_equal: reductions.array_equal, np.array_equiv: reductions.array_equiv,
    np.common_type: lambda *arrays: np.common_type(*(
        np.empty(0, a.dtype) if hasattr(a, "_trace") else a for a in arrays)),
    **({np.cumulative_sum: accumulations.cumulative_sum,
        np.cumulative_prod: accumulations.cumulative_prod, np.unstack: joining.unstack}
       if hasattr(np, "unstack") else {}),
    # refused: results whose size depends on the data, with what to write instead
    np.nonzero: refusing("np.nonzero (its result's size depends on the data)",
                     "keep the shape with np.where(cond, x, fill), or count with np.count_nonzero"),
    np.argwhere: refusing("np.argwhere (its result's size depends on the data)",
                     "keep the shape with np.where(cond, x, fill), or count with np.count_nonzero"),
    np.flatnonzero: refusing("np.flatnonzero (its result's size depends on the data)",
                     "keep the shape with np.where(cond, x, fill), or count with np.count_nonzero"),
    np.extract: refusing("np.extract (its result's size depends on the data)",
                     "keep the shape with np.where(cond, x, fill), or reduce with where=: x.sum(where=cond)"),
    np.unique: refusing("np.unique (its result's size depends on the data)",
                     "sort instead (np.sort keeps the size), or call np.unique outside the jitted function"),
    np.trim_zeros: refusing("np.trim_zeros (its result's size depends on the data)",
                     "slice with constant bounds, or trim outside the jitted function"),
    np.linalg.lstsq: refusing("np.linalg.lstsq (its residuals' size depends on the rank)",
                              "solve with np.linalg.pinv(a) @ b, or np.linalg.solve(a.T @ a, "
                              "a.T @ b)"),
    np.polyfit: refusing("np.polyfit", "fit with np.linalg.pinv(np.vander(x, deg + 1)) @ y"),
    np.einsum_path: refusing("np.einsum_path", "call np.einsum (optimize= is accepted) "
                             "directly; einsum_path's plan is not traced"),
}

# The functions whose result is a view of their first argument in NumPy (a write into one is
# seen through the other; views.py). Every other function's results are new arrays.
VIEW_FUNCTIONS = {
    np.reshape, np.ravel, np.transpose, np.matrix_transpose, np.linalg.matrix_transpose,
    np.swapaxes, np.moveaxis, np.rollaxis, np.real,
    np.squeeze, np.expand_dims, np.broadcast_to, np.broadcast_arrays, np.flip, np.fliplr,
    np.flipud, np.rot90, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.split,
    np.array_split, np.hsplit, np.vsplit, np.dsplit,
    # the argument itself when it needs no conversion (conversion.py copies when asked to)
    np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray, np.astype,
    np.real_if_close, np.unstack,
}
# Read-only views that tracejit computes with a gather: they are recomputed after a write.
GATHER_VIEWS = {np.diagonal, np.linalg.diagonal, np.lib.stride_tricks.sliding_window_view}
# Functions that are ufuncs underneath: their out= casts same_kind, not unsafe.
_UFUNC_OUT = {np.clip, np.round, np.around}
# Functions whose 0-d result NumPy gives as a 0-d array, not a NumPy scalar as a ufunc's
ARRAY_0D_FUNCTIONS = {np.where, np.select, np.tensordot, np.cross, np.cov, np.pad, np.tile,
                      np.roll}


# ---------------------------------------------------------------------------------------------
# The handlers Tracer.__array_ufunc__ and Tracer.__array_function__ call



# SciPy's special functions that are NumPy ufuncs reach __array_ufunc__ too. They are looked up
# by name in scipy.special (which the user's code has imported) and checked by identity, so
# tracejit does not import SciPy to trace NumPy code.
SCIPY_SPECIAL = {"expit": math_functions.sigmoid, "logit": math_functions.logit,
                 "erf": math_functions.erf, "gammaln": scipy_functions.gammaln,
                 "digamma": scipy_functions.digamma, "psi": scipy_functions.digamma}


def _ufunc(ufunc):
    """The implementation of a ufunc and the name errors call it by."""
    fn = UFUNCS.get(ufunc)
    if fn is not None:
        return fn, f"np.{ufunc.__name__}"
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, ufunc.__name__, None) is ufunc:
        return SCIPY_SPECIAL.get(ufunc.__name__), f"scipy.special.{ufunc.__name__}"
    return None, f"np.{ufunc.__name__}"


def handle_ufunc(ufunc, method, inputs, kwargs):
    if _has_selection(inputs + tuple(kwargs.values())):
        return NotImplemented       # NumPy then calls Selection.__array_ufunc__ (masked.py)
    fn, name = _ufunc(ufunc)
    if method == "at":
        return assignment.ufunc_at(ufunc.__name__, *inputs)
    name += "" if method == "__call__" else f".{method}"
    out = kwargs.pop("out", None)     # NumPy passes a positional out here too, as a tuple
    if isinstance(out, tuple) and all(o is None for o in out):
        out = None
    result = strong(fresh(_ufunc_result(ufunc, fn, name, method, inputs, kwargs), inputs))
    return assignment.write_out(result, out, f"ufunc '{ufunc.__name__}'",
                                "unsafe" if method == "reduce" else "same_kind")


def _ufunc_result(ufunc, fn, name, method, inputs, kwargs):
    if method == "accumulate" and ufunc in UFUNC_ACCUMULATE and len(inputs) == 1:
        if getattr(inputs[0], "ndim", None) == 0:   # (cumsum reads a 0-d array as 1-d)
            raise numpy_error(TypeError, "cannot accumulate on a scalar", "pass an array")
        # NumPy's default axis is 0 here (cumsum's is None: the flattened array)
        return UFUNC_ACCUMULATE[ufunc](inputs[0], axis=kwargs.pop("axis", 0),
                                       dtype=kwargs.pop("dtype", None))
    if method not in ("__call__", "reduce", "outer"):
        running = (f"; a running {ufunc.__name__} is a tracejit.scan over the axis"
                   if method == "accumulate" else "")
        raise unsupported(name, f"write it with supported NumPy functions{running}, or open "
                          "an issue")
    allowed = ("out", "dtype") + (("axis", "keepdims") if method == "reduce" else ())
    extra = {k: v for k, v in kwargs.items() if k not in allowed}
    if extra:
        raise unsupported(f"{name} with argument(s) {sorted(extra)}",
                          "call it without them, or open an issue")
    dtype = kwargs.get("dtype")
    if method == "reduce" and ufunc in UFUNC_REDUCE:
        (x,) = inputs
        out = UFUNC_REDUCE[ufunc](x, axis=kwargs.get("axis", 0),
                                  keepdims=kwargs.get("keepdims", False))
        return out if dtype is None else lifting.astype(out, dtype)
    if method == "outer" and fn is not None and len(inputs) == 2:
        a, b = lifting.lift_all(*inputs)
        return fn(lifting.reshape(a, a.shape + (1,) * b.ndim), b)
    if method != "__call__":
        raise unsupported(name, "write it with supported NumPy functions, or open an issue")
    if fn is None:
        raise unsupported(f"the function {name}",
                          "write it with supported NumPy functions, or open an issue")
    if dtype is not None and ufunc.nout == 1 and ufunc.types and "?" not in ufunc.types[0][-1:]:
        # NumPy computes in the requested dtype: cast the (non-Python-scalar) inputs first.
        inputs = [x if isinstance(x, (bool, int, float)) else lifting.astype(x, dtype)
                  for x in inputs]
    out = fn(*inputs)
    if dtype is not None:
        out = lifting.astype(out, dtype)
    return out


def handle_function(func, args, kwargs):
    if _has_selection(args + tuple(kwargs.values())):
        return NotImplemented       # NumPy then calls Selection.__array_function__
    # like= dispatch passes the module attribute: during a trace, patches.py's wrapper
    func = getattr(func, "__tracejit_original__", func)
    fn = FUNCTIONS.get(func)
    if fn is None:
        raise unsupported(f"the NumPy function {_name(func)}",
                          "write it with supported NumPy functions, or open an issue")
    out, args, kwargs = _take_out(func, args, kwargs)
    result = fn(*args, **kwargs)
    if _gather_view(func, args):
        link_readonly(result, args[0], lambda parent: fn(parent, *args[1:], **kwargs))
    elif func not in VIEW_FUNCTIONS:
        result = fresh(result, _tracers(args, kwargs))
    result = strong(result)
    if func in ARRAY_0D_FUNCTIONS:
        made_as_array(result)
    if out is None:
        return result
    return assignment.write_out(result, out, _name(func),
                                "same_kind" if func in _UFUNC_OUT else "unsafe")


def strong(result):
    """``result`` as NumPy returns it: an array or a NumPy scalar, strong under NEP 50 even
    when made of Python numbers alone. A traced Python number (a float or int argument ``s``)
    is weak, and stays weak through Python's own operators (``s * 2``, ``-s``: Python numbers
    again), but ``np.sqrt(s)``, ``np.add(s, 1)``, ``np.asarray(s)`` or ``np.sum(s)`` is a
    float64 or int64 that takes part in promotion (``x32 * np.sqrt(s)`` is float64, ``u8 +
    np.full(3, s)`` int64); kept weak, they took the array's dtype (float32, a wrapped uint8)."""
    if isinstance(result, (list, tuple)):
        items = [strong(r) for r in result]     # a namedtuple (SlogdetResult) takes *items
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if getattr(result, "_weak", False) and hasattr(result, "_view"):
        return type(result)(result._value, result._trace, False)
    return result


def _gather_view(func, args) -> bool:
    """Whether ``func(*args)`` is a read-only view of the tracer ``args[0]`` in NumPy:
    np.diag of a 2-d array is its np.diagonal (of a 1-d one, a new array), so it must see
    a later write into the array and refuse one into itself."""
    if not args or not hasattr(args[0], "_view"):
        return False
    return func in GATHER_VIEWS or (func is np.diag and args[0].ndim == 2)


def _has_selection(args) -> bool:
    """Whether a boolean-mask selection is among the arguments (or in a list among them)."""
    return any(isinstance(x, Selection) for a in args
               for x in (a if isinstance(a, (list, tuple)) else (a,)))


def _tracers(args, kwargs) -> list:
    """The tracers among a call's arguments (and in lists among them)."""
    found = []
    for a in list(args) + list(kwargs.values()):
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if hasattr(x, "_view"):
                found.append(x)
    return found


def _name(func) -> str:
    module = getattr(func, "__module__", "numpy") or "numpy"
    return module.replace("numpy._core.", "np.").replace("numpy", "np") + "." + func.__name__


# Where NumPy's signature cannot be read (C functions in some NumPy versions): the position of
# ``out`` among the positional parameters.
_OUT_POSITION_FALLBACK = {np.dot: 2, np.concatenate: 2}
_out_positions: dict = {}


def _out_position(func):
    """``out``'s position (an index; -1 for keyword-only), or None if ``func`` has no ``out``."""
    try:
        return _out_positions[func]
    except KeyError:
        pass
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        pos = _OUT_POSITION_FALLBACK.get(func)
    else:
        names = [p.name for p in params]
        pos = None
        if "out" in names:
            i = names.index("out")
            positional = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                             for p in params[:i + 1])
            pos = i if positional else -1
    _out_positions[func] = pos
    return pos


def _take_out(func, args, kwargs):
    """``out`` taken out of a call's arguments: the function computes a new array, which is
    then written into ``out`` (assignment.write_out)."""
    pos = _out_position(func)
    if pos is None:
        return None, args, kwargs
    out = kwargs.get("out")
    if out is not None:
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    elif pos >= 0 and len(args) > pos and args[pos] is not None:
        out, args = args[pos], args[:pos] + (None,) + args[pos + 1:]
    return out, args, kwargs


# What Tracer's operators, methods and NumPy protocols call, by name: x + y is
# TRACER_METHODS["add"](x, y), x.sum() TRACER_METHODS["sum"](x, ...), x[k] "getitem".
TRACER_METHODS = {
    "handle_ufunc": handle_ufunc, "handle_function": handle_function,
    "getitem": indexing.getitem, "add": arithmetic.add, "subtract": arithmetic.subtract,
    "multiply": arithmetic.multiply, "true_divide": arithmetic.true_divide,
    "floor_divide": arithmetic.floor_divide, "remainder": arithmetic.remainder,
    "power": arithmetic.power, "negative": arithmetic.negative, "absolute": arithmetic.absolute,
    "python_int": arithmetic.python_int,
    "invert": arithmetic.invert, "bitwise_and": arithmetic.bitwise_and,
    "bitwise_or": arithmetic.bitwise_or, "bitwise_xor": arithmetic.bitwise_xor,
    "left_shift": arithmetic.left_shift, "right_shift": arithmetic.right_shift,
    "equal": arithmetic.equal, "not_equal": arithmetic.not_equal, "less": arithmetic.less,
    "less_equal": arithmetic.less_equal, "greater": arithmetic.greater,
    "greater_equal": arithmetic.greater_equal, "clip": arithmetic.clip, "matmul": linalg.matmul,
    "dot": linalg.dot, "reshape": shapes.reshape_in_order, "ravel": shapes.ravel,
    "astype": lifting.astype,
    "transpose": shapes.transpose, "swapaxes": shapes.swapaxes, "squeeze": shapes.squeeze,
    "take": gather.take, "sum": reductions.sum, "prod": reductions.prod, "mean": reductions.mean,
    "var": reductions.var, "std": reductions.std, "amax": reductions.amax, "amin": reductions.amin,
    "argmax": reductions.argmax, "argmin": reductions.argmin, "all": reductions.all,
    "any": reductions.any,
}


def _returning_new_arrays(fn):
    def new_arrays(*args, **kwargs):
        return fresh(fn(*args, **kwargs), args)
    return new_arrays


# Methods whose result is a view (x[k], x.reshape(...), x.T, ...); the others return new arrays.
_VIEW_METHODS = {"handle_ufunc", "handle_function", "getitem", "reshape", "ravel", "transpose",
                 "swapaxes", "squeeze"}
TRACER_METHODS = {name: fn if name in _VIEW_METHODS else _returning_new_arrays(fn)
                  for name, fn in TRACER_METHODS.items()}
TRACER_METHODS.update(setitem=assignment.setitem, update_in_place=assignment.update_in_place,
                      write_out=assignment.write_out)
