"""Samplers on threefry bits, each JAX's algorithm (``jax/_src/random/core.py``), in NumPy ops.

Default dtypes are JAX's without x64 (float32, int32, uint32); float64 (and int64) are JAX's
with x64. Float conversion as JAX's: the top mantissa bits under exponent 0 make a float in
[1, 2), less 1. tracejit's IR has no bit-cast, so that float is computed as
``(bits >> (nbits - nmant)) * 2**-nmant``: the same value exactly (an integer below 2**nmant
times a power of two).
"""
from __future__ import annotations

import math

import numpy as np

from ..tracer import Tracer
from ..tracer.numpy import math_functions
from ..tracer.numpy.lifting import lift
from .erfinv import erf_inv
from .threefry import UINT_DTYPES, _shape, check_key, random_bits, subkeys


def is_float(dtype) -> bool:
    return dtype.kind == "f" or dtype.name == "bfloat16"     # ml_dtypes' is kind "V"


def _bits_and_mantissa(dtype):
    if dtype.name == "bfloat16":
        return 16, 7
    info = np.finfo(dtype)
    return info.bits, info.nmant


def _float_dtype(dtype, name):
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    if not is_float(dtype):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
    return dtype


def _as(x, dtype):
    """A bound (a number, array or tracer) in ``dtype``."""
    if isinstance(x, Tracer):
        return x if x.dtype == dtype else x.astype(dtype)
    return np.asarray(x, dtype=dtype)


def _shp(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _check_shape(name, shape, *param_shapes):
    if param_shapes:
        shape_ = np.broadcast_shapes(shape, *param_shapes)
        if tuple(shape) != tuple(shape_):
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                             f"argument, and the result of broadcasting the shapes must equal "
                             f"the shape argument, but got result {shape_} for shape argument "
                             f"{shape}.")


def _unit_floats(key, shape, dtype):
    """Floats in [0, 1) with the mantissa's bits random (JAX's ``_uniform`` before scaling)."""
    nbits, nmant = _bits_and_mantissa(dtype)
    rng_bits = 8 if nmant < 8 else nbits        # bfloat16: 8 random bits, as JAX draws
    bits = random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        bits = bits.astype(UINT_DTYPES[nbits])
    shifted = bits // UINT_DTYPES[nbits].type(1 << (rng_bits - nmant))
    return shifted.astype(dtype) * dtype.type(2.0 ** -nmant)


def _uniform(key, shape, dtype, minval, maxval):
    minval = _as(minval, dtype)
    maxval = _as(maxval, dtype)
    _check_shape("uniform", shape, _shp(minval), _shp(maxval))
    floats = _unit_floats(key, shape, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.maximum(minval, floats * (maxval - minval) + minval)
    if not isinstance(out, Tracer):
        out = np.asarray(out, dtype)
    return out


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval) (``jax.random.uniform``; default float32)."""
    key = check_key("uniform", key)
    return _uniform(key, _shape(shape), _float_dtype(dtype, "uniform"), minval, maxval)


def normal(key, shape=(), dtype=None):
    """Standard normal floats (``jax.random.normal``): sqrt(2) * erfinv(u), u uniform in
    (-1, 1)."""
    key = check_key("normal", key)
    dtype = _float_dtype(dtype, "normal")
    lo = np.nextafter(dtype.type(-1.0), dtype.type(0.0))
    u = _uniform(key, _shape(shape), dtype, lo, dtype.type(1.0))
    return dtype.type(np.sqrt(2)) * erf_inv(u)


def _erf(x, dtype):
    """erf in ``dtype``: the IR's erf op traced, math.erf (in double, then rounded) eagerly."""
    if isinstance(x, Tracer):
        return _as(math_functions.erf(x), dtype)
    x = np.asarray(x)
    return np.vectorize(math.erf, otypes=[dtype])(x) if x.size else x.astype(dtype)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal floats truncated to (lower, upper) (``jax.random.truncated_normal``:
    uniform between erf(lower/sqrt2) and erf(upper/sqrt2), then sqrt2 * erfinv). erf is
    math.erf's (eagerly) or tracejit's (traced), not XLA's, so values agree with JAX's to a few
    ulp; traced bounds are clipped to [lower, upper] (JAX: to the floats just inside)."""
    key = check_key("truncated_normal", key)
    dtype = _float_dtype(dtype, "truncated_normal")
    if shape is None:
        shape = np.broadcast_shapes(_shp(lower), _shp(upper))
    else:
        shape = _shape(shape)
        _check_shape("truncated_normal", shape, _shp(lower), _shp(upper))
    sqrt2 = dtype.type(np.sqrt(2))
    lower, upper = _as(lower, dtype), _as(upper, dtype)
    a = _erf(lower / sqrt2, dtype)
    b = _erf(upper / sqrt2, dtype)
    out = sqrt2 * erf_inv(_uniform(key, shape, dtype, a, b))
    if isinstance(lower, Tracer) or isinstance(upper, Tracer):
        return np.clip(out, lower, upper)
    return np.clip(out, np.nextafter(lower, dtype.type(np.inf)),
                   np.nextafter(upper, dtype.type(-np.inf))).astype(dtype)


def bernoulli(key, p=0.5, shape=None):
    """Booleans, True with probability p (``jax.random.bernoulli``, mode "low"): uniform < p,
    the uniform in p's float dtype (a Python float: float32)."""
    key = check_key("bernoulli", key)
    if isinstance(p, (float, int)) and not isinstance(p, bool):
        p = np.float32(p)
    if not isinstance(p, Tracer):
        p = np.asarray(p)
    if not is_float(p.dtype):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {p.dtype}.")
    if shape is None:
        shape = tuple(p.shape)
    else:
        shape = _shape(shape)
        _check_shape("bernoulli", shape, p.shape)
    return _uniform(key, shape, np.dtype(p.dtype), 0.0, 1.0) < p


def _safe_rem(x, span):
    """x % span as XLA's unsigned remainder: x where span is 0."""
    zero = span == span.dtype.type(0)
    with np.errstate(divide="ignore"):
        return np.where(zero, x, x % np.where(zero, span.dtype.type(1), span))


def _int_bound(v):
    if isinstance(v, Tracer):
        return v if v.dtype.kind in "iu" else v.astype(np.int64)
    v = np.asarray(v)
    return v if v.dtype.kind in "iu" else v.astype(np.int64)


def _clip_to(v, dtype):
    """v clipped to dtype's range, then converted (JAX's ``_convert_and_clip_integer``)."""
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(v.dtype).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(v.dtype).max))
    return np.clip(v, v.dtype.type(lo), v.dtype.type(hi)).astype(dtype)


def randint(key, shape, minval, maxval, dtype=None):
    """Integers in [minval, maxval) (``jax.random.randint``, default int32): two draws of
    nbits combined modulo the span (JAX's algorithm, biased as JAX's is by
    span**2 / 2**(2 nbits))."""
    key = check_key("randint", key)
    dtype = np.dtype(np.int32 if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    shape = _shape(shape)
    sample = dtype
    minval, maxval = _int_bound(minval), _int_bound(maxval)
    info = np.iinfo(dtype)
    if info.bits < 32:              # sampled in 32 bits, as JAX does
        sample = np.dtype(np.int32)
        minval = np.clip(minval.astype(np.int32), np.int32(info.min), np.int32(info.max))
        maxval = np.clip(maxval.astype(np.int32), np.int32(info.min), np.int32(info.max + 1))
    _check_shape("randint", shape, _shp(minval), _shp(maxval))
    nbits = np.iinfo(sample).bits
    udtype = UINT_DTYPES[nbits]
    top = min(int(np.iinfo(sample).max), int(np.iinfo(maxval.dtype).max))
    maxval_out_of_range = maxval > maxval.dtype.type(top)
    minval = _clip_to(minval, sample)
    maxval = _clip_to(maxval, sample)

    k1, k2 = subkeys(key, 2)
    higher = random_bits(k1, nbits, shape)
    lower = random_bits(k2, nbits, shape)
    with np.errstate(over="ignore"):
        span = (maxval - minval).astype(udtype)
        span = np.where(maxval <= minval, udtype.type(1), span)
        span = np.where(maxval_out_of_range & (maxval > minval), span + udtype.type(1), span)
        span = _as(span, udtype)
        multiplier = _safe_rem(udtype.type(1 << (nbits // 2)), span)
        multiplier = _safe_rem(multiplier * multiplier, span)
        offset = _safe_rem(_safe_rem(higher, span) * multiplier + _safe_rem(lower, span), span)
        out = minval + offset.astype(sample)
    out = out if out.dtype == dtype else out.astype(dtype)
    return out if isinstance(out, Tracer) else np.asarray(out)


def gumbel(key, shape=(), dtype=None):
    """Gumbel floats (``jax.random.gumbel``, mode "low"): -log(-log(u)), u in [tiny, 1)."""
    key = check_key("gumbel", key)
    dtype = _float_dtype(dtype, "gumbel")
    return _gumbel(key, _shape(shape), dtype)


def _gumbel(key, shape, dtype):
    tiny = np.finfo(np.float32 if dtype.name == "bfloat16" else dtype).tiny   # same exponent
    u = _uniform(key, shape, dtype, tiny, 1.0)
    return -np.log(-np.log(u))


def exponential(key, shape=(), dtype=None):
    """Exponential floats, rate 1 (``jax.random.exponential``): -log1p(-u)."""
    key = check_key("exponential", key)
    dtype = _float_dtype(dtype, "exponential")
    return -np.log1p(-_uniform(key, _shape(shape), dtype, 0.0, 1.0))


def categorical(key, logits, axis=-1, shape=None, replace=True):
    """Indices drawn with probabilities softmax(logits, axis) (``jax.random.categorical``):
    argmax of logits plus Gumbel noise (with replacement), or the top k of one draw of it
    (without)."""
    key = check_key("categorical", key)
    if not isinstance(logits, Tracer):
        logits = np.asarray(logits)
    if not is_float(logits.dtype):
        logits = logits.astype(np.float32)
    ndim = logits.ndim
    ax = axis + ndim if axis < 0 else axis
    batch_shape = tuple(d for i, d in enumerate(logits.shape) if i != ax)
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape(shape)
        _check_shape("categorical", shape, batch_shape)
    dtype = np.dtype(logits.dtype)
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        neg = ax - ndim
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(neg % ndim, logits.shape[neg])
        noise = _gumbel(key, (*prefix, *logits_shape), dtype)
        expanded = logits.reshape((1,) * len(prefix) + tuple(logits.shape))
        return np.argmax(noise + expanded, axis=neg).astype(np.int32)
    k = math.prod(prefix)
    if k > logits.shape[ax]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                         f"of categories ({logits.shape[ax]}).")
    g = np.moveaxis(logits + _gumbel(key, tuple(logits.shape), dtype), ax, -1)
    top = np.argsort(-g, axis=-1, kind="stable")[..., :k]           # lax.top_k's order
    return np.moveaxis(top, -1, 0).reshape(shape).astype(np.int32)


def _shuffle(key, x, axis):
    n = x.size if hasattr(x, "size") else np.size(x)
    rounds = int(np.ceil(3 * np.log(max(1, n)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        key, sub = subkeys(key, 2)
        sort_keys = random_bits(sub, 32, tuple(x.shape))
        order = np.argsort(sort_keys, axis=axis, kind="stable")
        x = np.take_along_axis(x, order, axis=axis)
    return x


def _take(a, ind, axis):
    """np.take, with a concrete ``a`` at traced indices made a constant of their trace first
    (NumPy dispatches np.take on ``a`` alone)."""
    if isinstance(ind, Tracer) and not isinstance(a, Tracer):
        a = lift(np.asarray(a), ind._trace)
    return np.take(a, ind, axis=axis)


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (an int) or of x along ``axis``
    (``jax.random.permutation``: sorts by random 32-bit keys)."""
    key = check_key("permutation", key)
    if isinstance(x, (int, np.integer)):
        return _shuffle(key, np.arange(int(x), dtype=np.int32), 0)
    if not isinstance(x, Tracer):
        x = np.asarray(x)
    if x.ndim == 0:
        raise TypeError("x must be an integer or at least 1-dimensional")
    axis = axis + x.ndim if axis < 0 else axis
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, np.arange(x.shape[axis], dtype=np.int32), 0)
    return _take(x, ind, axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """A sample from a (an int: arange(a)), as ``jax.random.choice``."""
    key = check_key("choice", key)
    shape = _shape(shape)
    scalar = isinstance(a, (int, np.integer))
    if not scalar and not isinstance(a, Tracer):
        a = np.asarray(a)
    if not scalar:
        axis = axis + a.ndim if axis < 0 else axis
    n_inputs = int(a) if scalar else a.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return np.zeros(shape, dtype=np.int32 if scalar else a.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if scalar else _take(a, ind, axis)
        else:
            perm = permutation(key, n_inputs if scalar else a, axis)
            result = perm[(slice(None),) * (0 if scalar else axis) + (slice(n_draws),)]
    else:
        if not isinstance(p, Tracer):
            p = np.asarray(p)
        if not is_float(p.dtype):
            p = p.astype(np.float32)
        if tuple(p.shape) != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as "
                             f"a.shape[axis]. p has shape {tuple(p.shape)} and a.shape[axis] "
                             f"is {n_inputs}.")
        dtype = np.dtype(p.dtype)
        if replace:
            cum = np.cumsum(p)
            r = cum[-1] * (dtype.type(1) - _uniform(key, shape, dtype, 0.0, 1.0))
            ind = np.searchsorted(cum, r).astype(np.int32)
        else:
            g = _gumbel(key, (n_inputs,), dtype) + np.log(p)
            ind = np.argsort(-g, kind="stable")[:n_draws].astype(np.int32)
        result = ind if scalar else _take(a, ind, axis)
    if scalar:
        return result.reshape(shape)
    return result.reshape(tuple(a.shape[:axis]) + shape + tuple(a.shape[axis + 1:]))
