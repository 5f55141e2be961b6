"""NumPy functions on Tracers: the ``__array_ufunc__`` and ``__array_function__`` tables.

A NumPy function that is not in these tables raises an error naming it, so unsupported code
fails loudly at trace time instead of computing something else.
"""
from __future__ import annotations

import numpy as np

from . import primitives as P
from .einsum import einsum
from .errors import unsupported

UFUNCS = {
    np.add: P.add, np.subtract: P.subtract, np.multiply: P.multiply,
    np.true_divide: P.true_divide, np.floor_divide: P.floor_divide,
    np.remainder: P.remainder, np.power: P.power, np.float_power: None,
    np.maximum: P.maximum, np.minimum: P.minimum, np.arctan2: P.arctan2,
    np.equal: P.equal, np.not_equal: P.not_equal, np.less: P.less,
    np.less_equal: P.less_equal, np.greater: P.greater, np.greater_equal: P.greater_equal,
    np.logical_and: P.logical_and, np.logical_or: P.logical_or,
    np.logical_xor: P.logical_xor, np.bitwise_and: P.bitwise_and,
    np.bitwise_or: P.bitwise_or, np.bitwise_xor: P.bitwise_xor,
    np.negative: P.negative, np.positive: lambda x: P.lift(x), np.absolute: P.absolute,
    np.fabs: P.absolute, np.sign: P.sign, np.exp: P.exp, np.exp2: P.exp2,
    np.expm1: P.expm1, np.log: P.log, np.log2: P.log2, np.log10: P.log10,
    np.log1p: P.log1p, np.sqrt: P.sqrt, np.square: P.square, np.reciprocal: P.reciprocal,
    np.sin: P.sin, np.cos: P.cos, np.tan: P.tan, np.arcsin: P.arcsin, np.arccos: P.arccos,
    np.arctan: P.arctan, np.sinh: P.sinh, np.cosh: P.cosh, np.tanh: P.tanh,
    np.arcsinh: P.arcsinh, np.arctanh: P.arctanh, np.floor: P.floor, np.ceil: P.ceil,
    np.rint: P.rint, np.trunc: P.trunc, np.logical_not: P.logical_not, np.invert: P.invert,
    np.isnan: P.isnan, np.isinf: P.isinf, np.isfinite: P.isfinite, np.matmul: P.matmul,
}
UFUNCS = {k: v for k, v in UFUNCS.items() if v is not None}

_UFUNC_REDUCE = {np.add: P.sum, np.multiply: P.prod, np.maximum: P.amax, np.minimum: P.amin,
                 np.logical_and: P.all, np.logical_or: P.any}


def handle_ufunc(ufunc, method, inputs, kwargs):
    if kwargs.get("out") is not None:
        raise unsupported(f"np.{ufunc.__name__}(..., out=...)",
                          "assign the result instead: y = np.f(x)")
    extra = {k: v for k, v in kwargs.items() if k not in ("out", "dtype")}
    if extra:
        raise unsupported(f"np.{ufunc.__name__} with argument(s) {sorted(extra)}")
    if method == "reduce" and ufunc in _UFUNC_REDUCE:
        (x,) = inputs
        return _UFUNC_REDUCE[ufunc](x, axis=kwargs.get("axis", 0),
                                    keepdims=kwargs.get("keepdims", False))
    if method != "__call__":
        raise unsupported(f"np.{ufunc.__name__}.{method}")
    fn = UFUNCS.get(ufunc)
    if fn is None:
        raise unsupported(f"the NumPy function np.{ufunc.__name__}",
                          "write it with supported NumPy functions, or open an issue")
    out = fn(*inputs)
    if kwargs.get("dtype") is not None:
        out = P.astype(out, kwargs["dtype"])
    return out


def _reduction(f):
    def g(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if out is not None:
            raise unsupported("out= in a reduction", "assign the result instead")
        _no_extra(f.__name__, kw, ("initial", "where"))
        return f(a, axis, keepdims, dtype)
    return g


def _no_extra(name, kw, names):
    bad = [k for k in names if kw.get(k, np._NoValue) is not np._NoValue and
           kw.get(k) is not None]
    if bad or set(kw) - set(names):
        raise unsupported(f"np.{name} with {sorted(set(bad) | (set(kw) - set(names)))}")


def _minmax(f):
    def g(a, axis=None, out=None, keepdims=False, **kw):
        if out is not None:
            raise unsupported("out= in a reduction", "assign the result instead")
        _no_extra(f.__name__, kw, ("initial", "where"))
        return f(a, axis, keepdims)
    return g


def _arg(f):
    def g(a, axis=None, out=None, *, keepdims=False):
        return f(a, axis, keepdims)
    return g


def _var(f):
    def g(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        return f(a, axis, keepdims, ddof)
    return g


def _where(condition, x=None, y=None):
    if x is None and y is None:
        raise unsupported("np.where(condition) with one argument (its result size depends "
                          "on the data)", "use np.where(condition, x, y)")
    return P.where(condition, x, y)


def _like(value):
    def g(a, dtype=None, order="K", subok=True, shape=None, **kw):
        a = P.lift(a)
        shape = a.shape if shape is None else shape
        return P.full(shape, np.asarray(value, dtype=dtype or a.dtype), trace=a._trace)
    return g


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    a = P.lift(a)
    shape = a.shape if shape is None else shape
    if hasattr(fill_value, "_trace"):
        return P.full(shape, fill_value, dtype or a.dtype)
    return P.full(shape, np.asarray(fill_value, dtype=dtype or a.dtype), trace=a._trace)


def _hstack(tup, **kw):
    xs = [np.atleast_1d(x) if not hasattr(x, "_trace") else x for x in tup]
    xs = [P.reshape(x, (1,)) if P.lift(x).ndim == 0 else x for x in xs]
    return P.concatenate(xs, axis=0 if P.lift(xs[0]).ndim == 1 else 1)


def _vstack(tup, **kw):
    xs = [P.lift(x) for x in P.lift_all(*tup)]
    xs = [P.reshape(x, (1, -1)) if x.ndim <= 1 else x for x in xs]
    return P.concatenate(xs, axis=0)


def _atleast(n):
    def g(*arys):
        outs = []
        for a in arys:
            a = P.lift(a)
            if a.ndim < n:
                shape = {1: (1,), 2: (1, 1), 3: (1, 1, 1)}[n] if a.ndim == 0 else (
                    (1,) + a.shape if n == 2 else ((1,) + a.shape + (1,) if a.ndim == 1
                                                   else a.shape + (1,)))
                a = P.reshape(a, shape)
            outs.append(a)
        return outs[0] if len(outs) == 1 else outs
    return g


def _split(ary, indices_or_sections, axis=0):
    x = P.lift(ary)
    axis = P.normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        if n % indices_or_sections:
            raise ValueError("array split does not result in an equal division")
        step = n // indices_or_sections
        bounds = list(range(0, n + 1, step))
    else:
        bounds = [0] + [min(int(i), n) for i in indices_or_sections] + [n]
    outs = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        starts = [0] * x.ndim
        stops = list(x.shape)
        starts[axis], stops[axis] = a, max(a, b)
        outs.append(P.slice_(x, starts, stops, [1] * x.ndim))
    return outs


def _linalg_norm(x, ord=None, axis=None, keepdims=False):
    if ord not in (None, 2, "fro") or (ord == 2 and axis is None and P.lift(x).ndim > 1):
        raise unsupported(f"np.linalg.norm(ord={ord!r})", "use ord=None (the 2-norm)")
    x = P.lift(x)
    return P.sqrt(P.sum(P.multiply(x, x), axis, keepdims))


def _tri(upper):
    def g(m, k=0):
        x = P.lift(m)
        r = P.iota(x.shape[-2:], 0, trace=x._trace)
        c = P.iota(x.shape[-2:], 1, trace=x._trace)
        keep = P.greater_equal(P.subtract(c, r), k) if upper else P.less_equal(
            P.subtract(c, r), k)
        return P.where(keep, x, np.zeros((), x.dtype))
    return g


def _repeat(a, repeats, axis=None):
    x = P.lift(a)
    if not isinstance(repeats, (int, np.integer)):
        raise unsupported("np.repeat with per-element repeats", "pass one integer")
    if axis is None:
        x, axis = P.reshape(x, (-1,)), 0
    axis = P.normalize_axis(axis, x.ndim)
    idx = np.repeat(np.arange(x.shape[axis]), repeats)
    return P.take(x, idx, axis)


def _tile(a, reps):
    x = P.lift(a)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    nd = max(x.ndim, len(reps))
    x = P.reshape(x, (1,) * (nd - x.ndim) + x.shape)
    reps = (1,) * (nd - len(reps)) + reps
    for ax, r in enumerate(reps):
        if r != 1:
            x = P.take(x, np.tile(np.arange(x.shape[ax]), r), ax)
    return x


FUNCTIONS = {
    np.sum: _reduction(P.sum), np.prod: _reduction(P.prod), np.mean: _reduction(P.mean),
    np.var: _var(P.var), np.std: _var(P.std),
    np.max: _minmax(P.amax), np.amax: _minmax(P.amax),
    np.min: _minmax(P.amin), np.amin: _minmax(P.amin),
    np.all: _minmax(P.all), np.any: _minmax(P.any),
    np.argmax: _arg(P.argmax), np.argmin: _arg(P.argmin),
    np.reshape: lambda a, shape=None, order="C", **kw: P.reshape(a, kw.get("newshape", shape)),
    np.ravel: lambda a, order="C": P.reshape(a, (-1,)),
    np.transpose: lambda a, axes=None: P.transpose(a, axes),
    np.swapaxes: P.swapaxes, np.moveaxis: P.moveaxis,
    np.squeeze: lambda a, axis=None: P.squeeze(a, axis),
    np.expand_dims: P.expand_dims, np.broadcast_to: lambda a, shape, subok=False:
        P.broadcast_to(a, (shape,) if isinstance(shape, int) else shape),
    np.concatenate: lambda arrays, axis=0, out=None, **kw: P.concatenate(arrays, axis),
    np.stack: lambda arrays, axis=0, out=None, **kw: P.stack(arrays, axis),
    np.hstack: _hstack, np.vstack: _vstack,
    np.atleast_1d: _atleast(1), np.atleast_2d: _atleast(2),
    np.split: _split, np.flip: lambda m, axis=None: P.flip(m, axis),
    np.where: _where, np.clip: lambda a, a_min=None, a_max=None, out=None, **kw:
        P.clip(a, kw.get("min", a_min), kw.get("max", a_max)),
    np.dot: lambda a, b, out=None: P.dot(a, b), np.vdot: lambda a, b: P.sum(
        P.multiply(P.reshape(a, (-1,)), P.reshape(b, (-1,)))),
    np.inner: lambda a, b: P.tensordot(a, b, ([-1], [-1])),
    np.tensordot: lambda a, b, axes=2: P.tensordot(a, b, axes),
    np.outer: lambda a, b, out=None: P.outer(a, b), np.einsum: einsum,
    np.take: lambda a, indices, axis=None, out=None, mode="raise": P.take(a, indices, axis),
    np.take_along_axis: lambda arr, indices, axis: P.take_along_axis(arr, indices, axis),
    np.pad: lambda array, pad_width, mode="constant", **kw: P.pad(
        array, pad_width, mode, kw.get("constant_values", 0)),
    np.zeros_like: _like(0), np.ones_like: _like(1), np.empty_like: _like(0),
    np.full_like: _full_like,
    np.abs: P.absolute, np.round: lambda a, decimals=0, out=None: _round(a, decimals),
    np.around: lambda a, decimals=0, out=None: _round(a, decimals),
    np.linalg.norm: _linalg_norm, np.triu: _tri(True), np.tril: _tri(False),
    np.repeat: _repeat, np.tile: _tile,
    np.shape: lambda a: P.lift(a).shape, np.ndim: lambda a: P.lift(a).ndim,
    np.size: lambda a, axis=None: P.lift(a).size if axis is None else P.lift(a).shape[axis],
    np.copy: lambda a, order="K", subok=False: P.lift(a),
    np.result_type: lambda *xs: np.result_type(*(x.dtype if hasattr(x, "_trace") else x
                                                 for x in xs)),
    np.cumsum: None,
}


def _round(a, decimals):
    x = P.lift(a)
    if decimals == 0:
        return P.rint(x) if x.dtype.kind == "f" else x
    scale = np.asarray(10.0 ** decimals, x.dtype)
    return P.true_divide(P.rint(P.multiply(x, scale)), scale)


def handle_function(func, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is None:
        name = getattr(func, "__module__", "numpy").replace("numpy", "np") + "." + func.__name__
        raise unsupported(f"the NumPy function {name}",
                          "write it with supported NumPy functions, or open an issue")
    return fn(*args, **kwargs)
