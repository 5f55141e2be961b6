"""NumPy functions on Tracers: the ``__array_ufunc__`` and ``__array_function__`` tables.

A NumPy function that is not in these tables raises an error naming it, so unsupported code
fails loudly at trace time instead of computing something else.
"""
from __future__ import annotations

import inspect

import numpy as np

from . import primitives as P
from .einsum import einsum
from .errors import numpy_error, unsupported

_OUT_HINT = "assign the result instead (y = {}(...)); in-place updates come later"

UFUNCS = {
    np.add: P.add, np.subtract: P.subtract, np.multiply: P.multiply,
    np.true_divide: P.true_divide, np.floor_divide: P.floor_divide,
    np.remainder: P.remainder, np.power: P.power,
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
    np.fmax: P.fmax, np.fmin: P.fmin, np.logaddexp: P.logaddexp, np.hypot: P.hypot,
    np.float_power: P.float_power, np.conjugate: lambda x: P.lift(x),
    np.deg2rad: lambda x: P.multiply(x, np.pi / 180), np.radians: lambda x: P.multiply(
        x, np.pi / 180), np.rad2deg: lambda x: P.multiply(x, 180 / np.pi),
    np.degrees: lambda x: P.multiply(x, 180 / np.pi),
    np.divmod: lambda a, b: (P.floor_divide(a, b), P.remainder(a, b)),
    np.vecdot: lambda a, b: P.sum(P.multiply(a, b), axis=-1),
}
UFUNCS = {k: v for k, v in UFUNCS.items() if v is not None}

_UFUNC_REDUCE = {np.add: P.sum, np.multiply: P.prod, np.maximum: P.amax, np.minimum: P.amin,
                 np.logical_and: P.all, np.logical_or: P.any}


def handle_ufunc(ufunc, method, inputs, kwargs):
    name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    out = kwargs.get("out")     # NumPy passes a positional out here too, as a tuple
    if any(o is not None for o in (out if isinstance(out, tuple) else (out,))):
        raise unsupported(f"{name}(..., out=...)", _OUT_HINT.format(name))
    allowed = ("out", "dtype") + (("axis", "keepdims") if method == "reduce" else ())
    extra = {k: v for k, v in kwargs.items() if k not in allowed}
    if extra:
        raise unsupported(f"{name} with argument(s) {sorted(extra)}",
                          "call it without them, or open an issue")
    dtype = kwargs.get("dtype")
    if method == "reduce" and ufunc in _UFUNC_REDUCE:
        (x,) = inputs
        out = _UFUNC_REDUCE[ufunc](x, axis=kwargs.get("axis", 0),
                                   keepdims=kwargs.get("keepdims", False))
        return out if dtype is None else P.astype(out, dtype)
    fn = UFUNCS.get(ufunc)
    if method == "outer" and fn is not None and len(inputs) == 2:
        a, b = P.lift_all(*inputs)
        fn = UFUNCS[ufunc]
        return fn(P.reshape(a, a.shape + (1,) * b.ndim), b)
    if method != "__call__":
        raise unsupported(name, "write it with supported NumPy functions, or open an issue")
    if fn is None:
        raise unsupported(f"the NumPy function {name}",
                          "write it with supported NumPy functions, or open an issue")
    if dtype is not None and ufunc.nout == 1 and ufunc.types and "?" not in ufunc.types[0][-1:]:
        # NumPy computes in the requested dtype: cast the (non-Python-scalar) inputs first.
        inputs = [x if isinstance(x, (bool, int, float)) else P.astype(x, dtype)
                  for x in inputs]
    out = fn(*inputs)
    if dtype is not None:
        out = P.astype(out, dtype)
    return out


def _reduction(f):
    def g(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        _no_extra(f.__name__, kw, ("initial", "where"))
        return f(a, axis, keepdims, dtype)
    return g


def _no_extra(name, kw, names, accepted=()):
    """Refuse keywords in ``names`` that are given, and any other than ``accepted``."""
    bad = [k for k in names if kw.get(k, np._NoValue) is not np._NoValue and
           kw.get(k) is not None]
    if bad or set(kw) - set(names) - set(accepted):
        raise unsupported(f"np.{name} with "
                          f"{sorted(set(bad) | (set(kw) - set(names) - set(accepted)))}")


def _minmax(f):
    def g(a, axis=None, out=None, keepdims=False, **kw):
        if f in (P.amax, P.amin):
            _no_extra(f.__name__, kw, ("where",), accepted=("initial",))
            initial = kw.get("initial", np._NoValue)
            return f(a, axis, keepdims, None if initial is np._NoValue else initial)
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


def _joining(f):
    """concatenate/stack/hstack/vstack with NumPy's ``dtype`` and ``casting``: the inputs are
    cast first (dropping the keywords would return another dtype than NumPy)."""
    def g(arrays, *args, dtype=None, casting="same_kind", **kw):
        if dtype is not None:
            arrays = [_cast(a, dtype, casting) for a in arrays]
        return f(arrays, *args, **kw)
    return g


def _cast(a, dtype, casting):
    src = P.abstract(a)[0].np
    if not np.can_cast(src, np.dtype(dtype), casting):
        raise numpy_error(TypeError, f"Cannot cast array data from {src!r} to "
                          f"{np.dtype(dtype)!r} according to the rule {casting!r}",
                          "pass casting='unsafe' or convert the inputs with .astype(...)")
    return P.astype(a, dtype)


def _hstack(tup):
    xs = [np.atleast_1d(x) if not hasattr(x, "_trace") else x for x in tup]
    xs = [P.reshape(x, (1,)) if P.lift(x).ndim == 0 else x for x in xs]
    return P.concatenate(xs, axis=0 if P.lift(xs[0]).ndim == 1 else 1)


def _vstack(tup):
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


def _array_split(ary, indices_or_sections, axis=0):
    x = P.lift(ary)
    if not isinstance(indices_or_sections, (int, np.integer)):
        return _split(x, indices_or_sections, axis)
    n, k = x.shape[P.normalize_axis(axis, x.ndim)], int(indices_or_sections)
    sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
    return _split(x, np.cumsum(sizes)[:-1].tolist(), axis)


def _dstack(tup):
    xs = [P.reshape(x, (1, -1, 1)) if x.ndim <= 1 else (P.expand_dims(x, -1) if x.ndim == 2
                                                         else x) for x in P.lift_all(*tup)]
    return P.concatenate(xs, axis=2)


def _column_stack(tup):
    xs = [P.reshape(x, (-1, 1)) if x.ndim < 2 else x for x in P.lift_all(*tup)]
    return P.concatenate(xs, axis=1)


def _diff(a, n=1, axis=-1, prepend=None, append=None):
    x = P.lift(a)
    if prepend is not None or append is not None:
        raise unsupported("np.diff with prepend= or append=", "concatenate them first")
    axis = P.normalize_axis(axis, x.ndim)
    for _ in range(n):
        m = x.shape[axis]
        lo, hi = [0] * x.ndim, list(x.shape)
        hi[axis] = max(m - 1, 0)
        first = P.slice_(x, lo, hi, [1] * x.ndim)
        lo[axis], hi[axis] = min(1, m), m
        rest = P.slice_(x, lo, hi, [1] * x.ndim)
        x = P.logical_xor(rest, first) if x.dtype == np.bool_ else P.subtract(rest, first)
    return x


def _roll(a, shift, axis=None):
    x = P.lift(a)
    if axis is None:
        return P.reshape(_roll(P.reshape(x, (-1,)), shift, 0), x.shape)
    shifts = np.broadcast_to(shift, np.shape(axis)).tolist() if np.ndim(axis) else [shift]
    for ax, sh in zip(np.atleast_1d(axis).tolist(), np.atleast_1d(shifts).tolist()):
        ax = P.normalize_axis(ax, x.ndim)
        n = x.shape[ax]
        if n:
            x = P.take(x, (np.arange(n) - int(sh)) % n, ax)
    return x


def _diagonal(a, offset=0, axis1=0, axis2=1):
    x = P.lift(a)
    a1, a2 = P.normalize_axis(axis1, x.ndim), P.normalize_axis(axis2, x.ndim)
    n1, n2 = x.shape[a1], x.shape[a2]
    rows = np.arange(max(0, -offset), min(n1, n2 - offset))
    rest = [i for i in range(x.ndim) if i not in (a1, a2)]
    x = P.transpose(x, rest + [a1, a2])
    lead = len(rest)
    return P.gather_linear(x, [P.lift(rows, x._trace), P.lift(rows + offset, x._trace)],
                           [lead, lead + 1])


def _diag(v, k=0):
    x = P.lift(v)
    if x.ndim == 2:
        return _diagonal(x, k)
    if x.ndim != 1:
        raise numpy_error(ValueError, f"np.diag: input must be 1- or 2-d, got shape "
                          f"{x.shape}", "use np.diagonal for more dimensions")
    n = x.shape[0] + abs(k)
    on = P.equal(P.subtract(P.iota((n, n), 1, trace=x._trace),
                            P.iota((n, n), 0, trace=x._trace)), k)
    # Along the k-th diagonal, v's index is the row (k >= 0) or the column (k < 0).
    vals = P.take(x, np.minimum(np.arange(n), x.shape[0] - 1), 0)
    vals = P.reshape(vals, (n, 1) if k >= 0 else (1, n))
    return P.where(on, P.broadcast_to(vals, (n, n)), np.zeros((), x.dtype))


def _trace_fn(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return P.sum(_diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise numpy_error(ValueError, "list of cases must be same length as list of "
                          "conditions", "give one choice per condition")
    if not condlist:
        raise numpy_error(ValueError, "select with an empty condition list is not possible",
                          "give at least one condition")
    dtype = P.result_dtype(*choicelist, default)     # Python scalars weak, as in NumPy 2
    out = P.astype(P.lift(default, P._trace_of(*condlist, *choicelist)), dtype)
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = P.where(cond, P.astype(P.lift(choice, out._trace), dtype), out)
    return out


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if returned:
        raise unsupported("np.average(returned=True)", "compute the weight sum separately")
    if weights is None:
        return P.mean(a, axis, keepdims)
    x, w = P.lift_all(a, weights)
    if w.shape != x.shape:
        if axis is None or w.ndim != 1:
            raise unsupported("np.average with weights of a different shape and no axis")
        ax = P.normalize_axis(axis, x.ndim)
        w = P.reshape(w, [w.shape[0] if i == ax else 1 for i in range(x.ndim)])
    return P.true_divide(P.sum(P.multiply(x, w), axis, keepdims),
                         P.sum(P.broadcast_to(w, x.shape), axis, keepdims))


def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = P.lift_all(a, b)
    close = P.less_equal(P.absolute(P.subtract(a, b)),
                         P.add(atol, P.multiply(rtol, P.absolute(b))))
    close = P.logical_or(close, P.equal(a, b))     # equal infinities
    if equal_nan:
        close = P.logical_or(close, P.logical_and(P.isnan(a), P.isnan(b)))
    return close


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = P.lift(x)
    if x.dtype.kind != "f":
        return x
    info = np.finfo(x.dtype)
    x = P.where(P.isnan(x), np.asarray(nan, x.dtype), x)
    x = P.where(P.logical_and(P.isinf(x), P.greater(x, 0)),
                np.asarray(info.max if posinf is None else posinf, x.dtype), x)
    return P.where(P.logical_and(P.isinf(x), P.less(x, 0)),
                   np.asarray(info.min if neginf is None else neginf, x.dtype), x)


def _count_nonzero(a, axis=None, *, keepdims=False):
    return P.sum(P.to_bool(a), axis, keepdims)


def _ptp(a, axis=None, out=None, keepdims=False):
    return P.subtract(P.amax(a, axis, keepdims), P.amin(a, axis, keepdims))


def _broadcast_arrays(*args, subok=False):
    xs = P.lift_all(*args)
    shape = np.broadcast_shapes(*(x.shape for x in xs))
    return tuple(P.broadcast_to(x, shape) for x in xs)


def _vector_norm(x, axis=None, keepdims=False, ord=2):
    return _linalg_norm(x, None if ord == 2 else ord, axis, keepdims)


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
    np.concatenate: _joining(lambda arrays, axis=0, out=None: P.concatenate(arrays, axis)),
    np.stack: _joining(lambda arrays, axis=0, out=None: P.stack(arrays, axis)),
    np.hstack: _joining(_hstack), np.vstack: _joining(_vstack),
    np.atleast_1d: _atleast(1), np.atleast_2d: _atleast(2),
    np.split: _split, np.flip: lambda m, axis=None: P.flip(m, axis),
    np.where: _where, np.clip: lambda a, a_min=None, a_max=None, out=None, **kw:
        P.clip(a, kw.get("min", a_min), kw.get("max", a_max)),
    np.dot: lambda a, b, out=None: P.dot(a, b), np.vdot: lambda a, b: P.sum(
        P.multiply(P.reshape(a, (-1,)), P.reshape(b, (-1,)))),
    np.inner: lambda a, b: P.tensordot(a, b, ([-1], [-1])),
    np.tensordot: lambda a, b, axes=2: P.tensordot(a, b, axes),
    np.outer: lambda a, b, out=None: P.outer(a, b), np.einsum: einsum,
    np.take: lambda a, indices, axis=None, out=None, mode="raise": P.take(a, indices, axis,
                                                                         mode),
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
    np.array_split: _array_split, np.fliplr: lambda m: P.flip(m, 1),
    np.flipud: lambda m: P.flip(m, 0), np.dstack: _dstack, np.column_stack: _column_stack,
    np.atleast_3d: _atleast(3), np.diff: _diff, np.roll: _roll, np.diagonal: _diagonal,
    np.diag: _diag, np.trace: _trace_fn, np.select: _select, np.average: _average,
    np.isclose: _isclose, np.nan_to_num: _nan_to_num, np.count_nonzero: _count_nonzero,
    np.ptp: _ptp, np.broadcast_arrays: _broadcast_arrays,
    np.astype: lambda x, dtype, /, *, copy=True, device=None: P.astype(x, dtype),
    np.matrix_transpose: lambda x, /: P.swapaxes(x, -1, -2),
    np.linalg.vector_norm: _vector_norm,
    np.cumsum: None,
}


def _round(a, decimals):
    x = P.lift(a)
    if decimals == 0:
        return P.rint(x) if x.dtype.kind == "f" else x
    scale = np.asarray(10.0 ** decimals, x.dtype)
    return P.true_divide(P.rint(P.multiply(x, scale)), scale)


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


def _check_no_out(func, args, kwargs):
    """Every NumPy function with an ``out`` parameter refuses it: writing into an array is not
    traced, and ignoring it would leave the user's array unchanged."""
    pos = _out_position(func)
    if pos is None:
        return
    given = kwargs.get("out") is not None or (pos >= 0 and len(args) > pos
                                              and args[pos] is not None)
    if given:
        name = _name(func)
        raise unsupported(f"{name}(..., out=...)", _OUT_HINT.format(name))


def handle_function(func, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is None:
        raise unsupported(f"the NumPy function {_name(func)}",
                          "write it with supported NumPy functions, or open an issue")
    _check_no_out(func, args, kwargs)
    return fn(*args, **kwargs)
