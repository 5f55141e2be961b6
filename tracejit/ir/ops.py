"""Every IR op: operands, attributes, type rule and reference semantics, defined once.

The IR is deliberately explicit, like JAX's lax: elementwise ops take operands of one dtype and
one shape. NumPy's implicit broadcasting and type promotion are made explicit by the tracer
(``broadcast_in_dim`` and ``convert`` ops), so that later stages never re-derive them.
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes
from .dtypes import DType
from .registry import IRTypeError, OpDef, register
from .types import TensorType

# ---------------------------------------------------------------------------------------------
# Elementwise ops

_NUMERIC = "iuf"     # dtype kinds (NumPy's): signed and unsigned int, float
_FLOAT = "f"
_ANY = "biuf"
_INTLIKE = "biu"


def _check_kinds(name: str, t: TensorType, kinds: str):
    if t.dtype.kind not in kinds:
        allowed = {"f": "floating", "iuf": "numeric", "biu": "bool or integer", "b": "bool"}
        raise IRTypeError(
            f"{name} needs {allowed.get(kinds, kinds)} operands, got {t.dtype}")


def _erf(x):
    out = np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()
    return np.asarray(out, dtype=x.dtype)


def _logistic(x):
    with np.errstate(over="ignore"):
        one = x.dtype.type(1)
        return one / (one + np.exp(-x))


def _numpy_names(name, fn, numpy):
    if numpy is not None:
        return tuple(numpy)
    return (fn.__name__,) if isinstance(fn, np.ufunc) else ()


def _wide(x):
    """A bfloat16 array as float32, exactly: every op on bfloat16 computes in float32 and
    rounds its result once, as JAX on a CPU does (ml_dtypes' own ufuncs mostly do the same,
    but not always: its maximum(-0.0, 0.0) is +0.0, NumPy's float32 one -0.0)."""
    bf16 = dtypes.bfloat16
    # (by name: comparing with bf16.np would import ml_dtypes for every array)
    if bf16 is not None and getattr(getattr(x, "dtype", None), "name", None) == "bfloat16":
        return x.astype(np.float32)
    return x


def elementwise_unary(name: str, fn, kinds: str = _NUMERIC, result_dtype: DType | None = None,
                      differentiable: bool = True, costly: bool = False, numpy=None,
                      internal: bool = False) -> OpDef:
    """An elementwise op of one operand; ``numpy`` defaults to ``fn``'s name if a ufunc."""
    def rule(ts, attrs):
        (t,) = ts
        _check_kinds(name, t, kinds)
        return [t.with_dtype(result_dtype) if result_dtype else t]

    def impl(x):
        with np.errstate(all="ignore"):
            out = fn(_wide(x))
        return np.asarray(out, dtype=result_dtype.np if result_dtype else x.dtype)

    return register(OpDef(name, 1, {}, rule, impl, "elementwise", differentiable,
                          meta={"numpy": fn}, arity=1, kinds=kinds, costly=costly,
                          numpy=_numpy_names(name, fn, numpy), internal=internal))


def elementwise_binary(name: str, fn, kinds: str = _NUMERIC, result_dtype: DType | None = None,
                       differentiable: bool = True, costly: bool = False, numpy=None,
                       internal: bool = False) -> OpDef:
    """An elementwise op of two operands of one type (see elementwise_unary)."""
    def rule(ts, attrs):
        a, b = ts
        _check_kinds(name, a, kinds)
        if a != b:
            raise IRTypeError(f"{name} operands must have one type, got {a} and {b}")
        return [a.with_dtype(result_dtype) if result_dtype else a]

    def impl(x, y):
        with np.errstate(all="ignore"):
            out = fn(_wide(x), _wide(y))
        return np.asarray(out, dtype=result_dtype.np if result_dtype else x.dtype)

    return register(OpDef(name, 2, {}, rule, impl, "elementwise", differentiable,
                          meta={"numpy": fn}, arity=2, kinds=kinds, costly=costly,
                          numpy=_numpy_names(name, fn, numpy), internal=internal))


neg = elementwise_unary("neg", np.negative)
abs = elementwise_unary("abs", np.abs)
sign = elementwise_unary("sign", np.sign, differentiable=False)
exp = elementwise_unary("exp", np.exp, _FLOAT, costly=True)
expm1 = elementwise_unary("expm1", np.expm1, _FLOAT, costly=True)
log = elementwise_unary("log", np.log, _FLOAT, costly=True)
log1p = elementwise_unary("log1p", np.log1p, _FLOAT, costly=True)
sqrt = elementwise_unary("sqrt", np.sqrt, _FLOAT)
sin = elementwise_unary("sin", np.sin, _FLOAT, costly=True)
cos = elementwise_unary("cos", np.cos, _FLOAT, costly=True)
tan = elementwise_unary("tan", np.tan, _FLOAT, costly=True)
tanh = elementwise_unary("tanh", np.tanh, _FLOAT, costly=True)
sinh = elementwise_unary("sinh", np.sinh, _FLOAT, costly=True)
cosh = elementwise_unary("cosh", np.cosh, _FLOAT, costly=True)
arcsin = elementwise_unary("arcsin", np.arcsin, _FLOAT, costly=True)
arccos = elementwise_unary("arccos", np.arccos, _FLOAT, costly=True)
arctan = elementwise_unary("arctan", np.arctan, _FLOAT, costly=True)
arcsinh = elementwise_unary("arcsinh", np.arcsinh, _FLOAT, costly=True)
arctanh = elementwise_unary("arctanh", np.arctanh, _FLOAT, costly=True)
# erf and logistic have no NumPy function: tracejit.nn.functional (gelu, sigmoid) emits them
erf = elementwise_unary("erf", _erf, _FLOAT, costly=True, internal=True)
logistic = elementwise_unary("logistic", _logistic, _FLOAT, costly=True, internal=True)


def _relu(x):
    return np.where(x <= 0, np.zeros((), x.dtype), x)      # NaN stays NaN, -0.0 gives 0.0


# max(x, 0) as nn.functional.relu means it: its derivative is 1 where the *result* is
# positive, 0 elsewhere (relu'(0) = 0, as torch and JAX; np.maximum's tie rule gives 0.5),
# read from the result, which the backward pass then keeps (remat rebuilds from it what
# reads it, such as a convolution's columns; a where() of a mask kept only the mask, and
# the CNN step's activations stayed 41 MiB instead of 15).
relu = elementwise_unary("relu", _relu, internal=True)


def _scipy_special(name):
    """A SciPy ufunc as a reference implementation, imported on its first use: tracing NumPy
    code never imports SciPy, and these ops are reached only from scipy.special (or from their
    derivatives)."""
    def fn(x):
        import scipy.special
        return getattr(scipy.special, name)(x)
    fn.__name__ = name
    return fn


# scipy.special.gammaln (log|Gamma(x)|) and its derivative digamma (scipy.special.psi)
gammaln = elementwise_unary("gammaln", _scipy_special("gammaln"), _FLOAT, costly=True,
                            internal=True)
def _digamma(x):
    """scipy.special.digamma, with the reflection for negative x done here as the kernels do
    it (mathlib.digamma64): SciPy's loses digits next to a pole (at -2 + 8 ulp it was 6 %
    off the kernels' value, which is the accurate one); x reduced to its nearest integer's
    distance ``r`` exactly, psi(x) = psi(1 - x) - pi / tan(pi r), in float64."""
    import scipy.special
    x = np.asarray(x)
    xd = x.astype(np.float64)
    with np.errstate(all="ignore"):
        r = xd - np.rint(xd)
        reflect = (xd < 0) & (r != 0) & np.isfinite(xd)
        out = scipy.special.digamma(np.where(reflect, 1.0 - xd, xd))
        out = np.where(reflect, out - np.pi / np.tan(np.pi * r), out)
    return out.astype(x.dtype) if x.dtype != np.float64 else out


digamma = elementwise_unary("digamma", _digamma, _FLOAT, costly=True, internal=True)
floor = elementwise_unary("floor", np.floor, _FLOAT, differentiable=False)
ceil = elementwise_unary("ceil", np.ceil, _FLOAT, differentiable=False)
round = elementwise_unary("round", np.rint, _FLOAT, differentiable=False)
logical_not = elementwise_unary("logical_not", np.logical_not, "b", differentiable=False)
isnan = elementwise_unary("isnan", np.isnan, _FLOAT, dtypes.bool_, differentiable=False)
isinf = elementwise_unary("isinf", np.isinf, _FLOAT, dtypes.bool_, differentiable=False)
isfinite = elementwise_unary("isfinite", np.isfinite, _FLOAT, dtypes.bool_,
                             differentiable=False)

add = elementwise_binary("add", np.add)
sub = elementwise_binary("sub", np.subtract)
mul = elementwise_binary("mul", np.multiply)
div = elementwise_binary("div", np.true_divide, _FLOAT)
floor_divide = elementwise_binary("floor_divide", np.floor_divide, differentiable=False)
remainder = elementwise_binary("remainder", np.remainder)
power = elementwise_binary("power", np.power, costly=True)
maximum = elementwise_binary("maximum", np.maximum)
minimum = elementwise_binary("minimum", np.minimum)
arctan2 = elementwise_binary("arctan2", np.arctan2, _FLOAT, costly=True)
hypot = elementwise_binary("hypot", np.hypot, _FLOAT)
copysign = elementwise_binary("copysign", np.copysign, _FLOAT)
logaddexp = elementwise_binary("logaddexp", np.logaddexp, _FLOAT, costly=True)
fmod = elementwise_binary("fmod", np.fmod)
eq = elementwise_binary("eq", np.equal, _ANY, dtypes.bool_, differentiable=False)
ne = elementwise_binary("ne", np.not_equal, _ANY, dtypes.bool_, differentiable=False)
lt = elementwise_binary("lt", np.less, _ANY, dtypes.bool_, differentiable=False)
le = elementwise_binary("le", np.less_equal, _ANY, dtypes.bool_, differentiable=False)
gt = elementwise_binary("gt", np.greater, _ANY, dtypes.bool_, differentiable=False)
ge = elementwise_binary("ge", np.greater_equal, _ANY, dtypes.bool_, differentiable=False)
logical_and = elementwise_binary("logical_and", np.logical_and, "b", differentiable=False)
logical_or = elementwise_binary("logical_or", np.logical_or, "b", differentiable=False)
logical_xor = elementwise_binary("logical_xor", np.logical_xor, "b", differentiable=False)
bitwise_and = elementwise_binary("bitwise_and", np.bitwise_and, _INTLIKE, differentiable=False)
bitwise_or = elementwise_binary("bitwise_or", np.bitwise_or, _INTLIKE, differentiable=False)
bitwise_xor = elementwise_binary("bitwise_xor", np.bitwise_xor, _INTLIKE, differentiable=False)


def _where_rule(ts, attrs):
    c, a, b = ts
    if c.dtype != dtypes.bool_:
        raise IRTypeError(f"where condition must be bool, got {c.dtype}")
    if not (c.shape == a.shape == b.shape) or a.dtype != b.dtype:
        raise IRTypeError(f"where operands must share one shape and dtype, got {c}, {a}, {b}")
    return [a]


where = register(OpDef("where", 3, {}, _where_rule, np.where, "elementwise", arity=3,
                       numpy=("where",)))


def _convert_rule(ts, attrs):
    (t,) = ts
    return [t.with_dtype(attrs["dtype"])]


def _convert_impl(x, dtype):
    with np.errstate(all="ignore"):
        return x.astype(dtype.np)


convert = register(OpDef("convert", 1, {"dtype": "dtype"}, _convert_rule, _convert_impl,
                         "elementwise", arity=1, numpy=("astype",)))

# ---------------------------------------------------------------------------------------------
# Sources: constants and index ranges


def _constant_rule(ts, attrs):
    v = attrs["value"]
    return [TensorType(dtypes.as_dtype(v.dtype), v.shape)]


constant = register(OpDef("constant", 0, {"value": "array"}, _constant_rule,
                          lambda value: np.array(value), "source", differentiable=False,
                          internal=True))


def _iota_rule(ts, attrs):
    shape, dim = attrs["shape"], attrs["dim"]
    if not 0 <= dim < len(shape):
        raise IRTypeError(f"iota dim {dim} out of range for shape {shape}")
    if attrs["dtype"].is_bool:
        raise IRTypeError("iota needs a numeric dtype")
    return [TensorType(attrs["dtype"], shape)]


def _iota_impl(shape, dim, dtype):
    idx = np.arange(shape[dim], dtype=dtype.np)
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return np.broadcast_to(idx.reshape(view), shape).copy()


iota = register(OpDef("iota", 0, {"shape": "ints", "dim": "int", "dtype": "dtype"},
                      _iota_rule, _iota_impl, "elementwise", differentiable=False,
                      arity=0, kinds=_NUMERIC, internal=True))

# ---------------------------------------------------------------------------------------------
# Layout ops (broadcast_in_dim, reshape, transpose, slice, rev, window) and the data movement
# of pad and concatenate: defined in layout_ops.py
from . import layout_ops  # noqa: E402

broadcast_in_dim, reshape, transpose = (layout_ops.broadcast_in_dim, layout_ops.reshape,
                                        layout_ops.transpose)
slice, slice_len, rev, window = (layout_ops.slice, layout_ops.slice_len, layout_ops.rev,
                                 layout_ops.window)
pad, concatenate = layout_ops.pad, layout_ops.concatenate

# ---------------------------------------------------------------------------------------------
# Reductions (no keepdims: the tracer reshapes)


def _reduce_rule(name, kinds):
    def rule(ts, attrs):
        (t,) = ts
        _check_kinds(name, t, kinds)
        axes = attrs["axes"]
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < t.ndim for a in axes):
            raise IRTypeError(f"{name} axes {list(axes)} invalid for {t}")
        if name in ("reduce_max", "reduce_min") and any(t.shape[a] == 0 for a in axes):
            raise IRTypeError(f"{name} over an empty axis of {t} has no identity")
        return [t.with_shape([d for i, d in enumerate(t.shape) if i not in axes])]
    return rule


def in_float32(fn, float16=True):
    """``fn`` computing bfloat16 and float16 (``float16``) operands in float32 and rounding
    its result once, as the kernels do: NumPy with ml_dtypes accumulates a bfloat16 sum in
    bfloat16 (a thousand ones sum to 256) and multiplies bfloat16 matrices into float32;
    tracejit's semantics are JAX's and PyTorch's. NumPy's own float16 sums accumulate in
    float32 only along the last axis: over a leading axis (and in its float16 matmul and
    prod) it rounds every step, so the NumPy tier's first call disagreed with the kernels'
    later ones. (max and min are exact: float16 stays NumPy's there.)"""
    def impl(*xs, **attrs):
        low = next((x.dtype for x in xs if getattr(x, "dtype", None) == np.float16), None)
        low = low if float16 else None
        wide = [x.astype(np.float32) if low is not None and getattr(x, "dtype", None) == low
                else _wide(x) for x in xs]
        if all(w is x for w, x in zip(wide, xs)):
            return fn(*xs, **attrs)
        with np.errstate(over="ignore"):
            return np.asarray(fn(*wide, **attrs)).astype(low or dtypes.bfloat16.np)
    return impl


def _reduction(name, fn, kinds=_NUMERIC, numpy=()):
    def impl(x, axes):
        return np.asarray(fn(x, axis=tuple(axes)), dtype=x.dtype)
    impl = in_float32(impl, float16=fn in (np.sum, np.prod))
    return register(OpDef(name, 1, {"axes": "ints"}, _reduce_rule(name, kinds), impl,
                          "reduction", meta={"numpy": fn}, kinds=kinds, numpy=numpy))


reduce_sum = _reduction("reduce_sum", np.sum, numpy=("sum", "mean"))
reduce_prod = _reduction("reduce_prod", np.prod, numpy=("prod",))
reduce_max = _reduction("reduce_max", np.max, _ANY, numpy=("max", "amax", "any"))
reduce_min = _reduction("reduce_min", np.min, _ANY, numpy=("min", "amin", "all"))


def _arg_rule(name):
    def rule(ts, attrs):
        (t,) = ts
        axis = attrs["axis"]
        if not 0 <= axis < t.ndim:
            raise IRTypeError(f"{name} axis {axis} out of range for {t}")
        if t.shape[axis] == 0:
            raise IRTypeError(f"{name} over an empty axis of {t}")
        return [TensorType(dtypes.int64, t.shape[:axis] + t.shape[axis + 1:])]
    return rule


argmax = register(OpDef("argmax", 1, {"axis": "int"}, _arg_rule("argmax"),
                        lambda x, axis: np.argmax(x, axis=axis).astype(np.int64), "reduction",
                        differentiable=False, numpy=("argmax",)))
argmin = register(OpDef("argmin", 1, {"axis": "int"}, _arg_rule("argmin"),
                        lambda x, axis: np.argmin(x, axis=axis).astype(np.int64), "reduction",
                        differentiable=False, numpy=("argmin",)))

# ---------------------------------------------------------------------------------------------
# Scans


def _along_axis_rule(name, kinds=_NUMERIC, result_dtype=None):
    """The type rule of an op along ``axis`` whose result has the operand's shape (scans,
    sorts): in the operand's dtype, or ``result_dtype``."""
    def rule(ts, attrs):
        (t,) = ts
        _check_kinds(name, t, kinds)
        if not 0 <= attrs["axis"] < t.ndim:
            raise IRTypeError(f"{name} axis {attrs['axis']} out of range for {t}")
        return [t.with_dtype(result_dtype) if result_dtype else t]
    return rule


# The running sum along ``axis``, added in order in the operand's dtype (like NumPy's
# np.add.accumulate: the first element is the first sum, so -0.0 stays -0.0; ints wrap).
# The tracer converts bool and small ints to NumPy's accumulation dtype first.
cumsum = register(OpDef("cumsum", 1, {"axis": "int"}, _along_axis_rule("cumsum"),
                        lambda x, axis: np.cumsum(x, axis=axis, dtype=x.dtype), "scan",
                        kinds=_NUMERIC, numpy=("cumsum",)))
# The running product, likewise in order in the operand's dtype (np.multiply.accumulate).
cumprod = register(OpDef("cumprod", 1, {"axis": "int"}, _along_axis_rule("cumprod"),
                         lambda x, axis: np.cumprod(x, axis=axis, dtype=x.dtype), "scan",
                         kinds=_NUMERIC, numpy=("cumprod",)))

# ---------------------------------------------------------------------------------------------
# Sorting along an axis. ``kind`` is NumPy's ("quicksort", "heapsort" or "stable"), and every
# stage sorts with NumPy's own sort of that kind, so ties (and -0.0 beside 0.0) come in exactly
# NumPy's order, stable or not. NaN sorts to the end, as in NumPy.

_SORT_KINDS = ("quicksort", "heapsort", "stable")


def _sort_rule(name, result_dtype=None):
    rule = _along_axis_rule(name, _ANY, result_dtype)

    def checked(ts, attrs):
        if attrs["kind"] not in _SORT_KINDS:
            raise IRTypeError(f"{name} kind {attrs['kind']!r} is not one of {_SORT_KINDS}")
        return rule(ts, attrs)
    return checked


sort = register(OpDef("sort", 1, {"axis": "int", "kind": "str"}, _sort_rule("sort"),
                      lambda x, axis, kind: np.sort(x, axis=axis, kind=kind), "sort",
                      numpy=("sort",)))
argsort = register(OpDef("argsort", 1, {"axis": "int", "kind": "str"},
                         _sort_rule("argsort", dtypes.int64),
                         lambda x, axis, kind: np.argsort(x, axis=axis, kind=kind).astype(
                             np.int64, copy=False), "sort", differentiable=False,
                         numpy=("argsort",)))

# ---------------------------------------------------------------------------------------------
# Contraction


def _matmul_rule(ts, attrs):
    a, b = ts
    if a.ndim < 2 or b.ndim < 2 or a.shape[:-2] != b.shape[:-2]:
        raise IRTypeError(f"matmul needs [...,m,k] and [...,k,n] with equal batch dims, "
                          f"got {a} and {b}")
    if a.shape[-1] != b.shape[-2] or a.dtype != b.dtype:
        raise IRTypeError(f"matmul operands do not match: {a} @ {b}")
    if a.dtype.is_bool:
        raise IRTypeError("matmul of bool arrays is not supported")
    return [a.with_shape(a.shape[:-2] + (a.shape[-2], b.shape[-1]))]


matmul = register(OpDef("matmul", 2, {}, _matmul_rule, in_float32(np.matmul), "matmul",
                        kinds=_NUMERIC,
                        numpy=("matmul", "dot", "tensordot")))

# ---------------------------------------------------------------------------------------------
# Side effects


def _debug_print_impl(*xs, fmt):
    print(fmt.format(*xs))
    return []


debug_print = register(OpDef("debug_print", None, {"fmt": "str"}, lambda ts, attrs: [],
                             _debug_print_impl, "effect", differentiable=False,
                             side_effect=True, internal=True))

# ---------------------------------------------------------------------------------------------
# Regions and barriers


def _call_rule(ts, attrs, regions):
    (body,) = regions
    if [p.type for p in body.params] != list(ts):
        raise IRTypeError(f"call operands {[str(t) for t in ts]} do not match @{body.name}'s "
                          f"parameters {[str(p.type) for p in body.params]}")
    return [r.type for r in body.results]


def _call_impl(*xs, regions, autocast=""):
    from .interpreter import interpret
    return list(interpret(regions[0], list(xs)))


# A call of a nested Function. ``tracejit.checkpoint`` emits one so that reverse mode knows to
# recompute the body in the backward pass; passes inline calls before code generation.
# ``autocast``: "" (left out when printed), or the dtype name (or "off") an inner autocast
# rewrote the body with (amp/autocast.py): an enclosing autocast then leaves the body alone.
call = register(OpDef("call", None, {"autocast": "str"}, _call_rule, _call_impl, "structural",
                      num_regions=1, internal=True, defaults={"autocast": ""}))


def _barrier_impl(*xs):
    return [x.copy() for x in xs]


# Identity on its operands that no pass looks through (no CSE, folding or fusion across it):
# it keeps recomputed (rematerialized) values from being merged with the originals.
optimization_barrier = register(OpDef("optimization_barrier", None, {},
                                      lambda ts, attrs: list(ts), _barrier_impl, "structural",
                                      internal=True))

# Linear algebra (solve, triangular_solve, cholesky, slogdet, eigh, svd, qr): defined in
# linalg_ops.py
from . import linalg_ops  # noqa: E402

solve, triangular_solve = linalg_ops.solve, linalg_ops.triangular_solve
cholesky, slogdet = linalg_ops.cholesky, linalg_ops.slogdet
eigh, svd, qr = linalg_ops.eigh, linalg_ops.svd, linalg_ops.qr

# Indexing with integer arrays (take, scatter_add, scatter) and writing a strided box
# (update_slice): defined in indexing_ops.py
from . import indexing_ops  # noqa: E402

take, scatter_add, scatter = indexing_ops.take, indexing_ops.scatter_add, indexing_ops.scatter
update_slice, update_box = indexing_ops.update_slice, indexing_ops.update_box

# Structured control flow (cond, while_loop, scan): defined in control_ops.py
from . import control_ops  # noqa: E402

cond, while_loop, scan = control_ops.cond, control_ops.while_loop, control_ops.scan
