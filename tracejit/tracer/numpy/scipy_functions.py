"""SciPy's functions on Tracers: scipy.special's gammaln and digamma (ufuncs: they reach the
tracer through ``__array_ufunc__``, dispatch.SCIPY_SPECIAL), and the Python functions
scipy.special.logsumexp, scipy.stats.norm.logpdf and scipy.stats.multivariate_normal.logpdf.

SciPy's Python functions convert their arguments with np.asarray, which a traced value
refuses, so tracejit cannot reach them; ``tracejit.scipy`` calls these instead (and SciPy's own
functions on arrays). Each mirrors the SciPy version installed here step by step, so dtypes,
shapes, infinities and NaNs come out as SciPy's: logsumexp excludes the maximum from the sum
and adds ``log1p`` of the rest (SciPy >= 1.15), norm.logpdf computes in float64 and gives nan
for ``scale <= 0``, multivariate_normal.logpdf squeezes its result.
"""
from __future__ import annotations

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error, unsupported
from ..tracer import Tracer
from ..views import fresh
from .arithmetic import (absolute, add, equal, greater, less, logical_and, logical_not,
                         logical_or, multiply, negative, power, sign, subtract, true_divide,
                         unary_op, where)
from .lifting import broadcast_to, constant, convert, lift, promote, reshape
from .linalg import diag
from .linalg_solvers import batched
from .math_functions import exp, isfinite, isnan, log, log1p
from .reductions import amax, sum as reduce_sum
from .rules import dt, float_result, has_tracer, normalize_axes
from .shapes import full, squeeze, swapaxes

# -- scipy.special ufuncs: float32 stays float32, everything else computes in float64 --------


def _scipy_float_unary(opdef):
    def f(x):
        x = lift(x)
        return unary_op(opdef, convert(x, dtypes.float32 if dt(x) == dtypes.float32
                                       else dtypes.float64))
    return f


gammaln = _scipy_float_unary(ops.gammaln)
digamma = _scipy_float_unary(ops.digamma)


# -- scipy.special.logsumexp -------------------------------------------------------------------


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) as SciPy computes it: the maximum's term apart (its count ``m``),
    the rest scaled by it, ``log1p(rest / m) + log(m) + max``; where that is not finite (an
    infinite or empty sum), ``log(sum(b * exp(a)))`` itself."""
    d = float_result(a) if b is None else float_result(a, b)
    if b is None:
        a = convert(lift(a), d)
    else:
        a, b = promote(a, b, dtype=d)
    if a.ndim == 0:
        a = reshape(a, (1,))
        b = None if b is None else reshape(b, (1,))
    axes = normalize_axes(axis, a.ndim)
    kept = tuple(1 if i in axes else n for i, n in enumerate(a.shape))
    if a.size == 0:
        out = full(kept, np.asarray(-np.inf, d.np), trace=a._trace)
        sgn = sign(out)
    else:
        out, sgn = _logsumexp(a, b, axes, return_sign)
        finite = isfinite(out)
        # SciPy's fallback, where the result is not finite, computed from inputs replaced by
        # harmless ones elsewhere: otherwise exp overflowing there would make the gradient NaN
        # (a zero cotangent times an infinite partial) where the result is finite.
        spread = broadcast_to(reshape(finite, kept), a.shape)
        safe_a = where(spread, np.asarray(0, d.np), a)
        terms = exp(safe_a) if b is None else multiply(where(spread, np.asarray(1, d.np), b),
                                                       exp(safe_a))
        total = reduce_sum(terms, axes, keepdims=True)
        if return_sign:
            sgn = where(finite, sgn, sign(total))
            total = absolute(total)
        out = where(finite, out, log(total))
    if not keepdims:
        out = squeeze(out, axes)
        sgn = squeeze(sgn, axes)
    # new arrays, not views: a 0-d result is a NumPy scalar, as SciPy's (a squeezed view came
    # back from jit as a 0-d array)
    return fresh((out, sgn)) if return_sign else fresh(out)


def _logsumexp(a, b, axes, return_sign):
    d = dt(a)
    if b is not None:
        a = where(equal(b, 0), np.asarray(-np.inf, d.np), a)
    a_max = amax(a, axes, keepdims=True)
    at_max = equal(a, a_max)
    # The maximum's terms, each exp(a - a_max) = exp(0) = 1: the same count as the mask would
    # give, but varying with a, so that out = log(sum(b exp(a - a_max))) + a_max, which does
    # not depend on a_max, and each derivative is the softmax's even at ties (a constant
    # count sent the max's share through amax, split equally among ties whatever b). An
    # infinite maximum counts 1 with no derivative (exp(inf - inf) would make it NaN).
    shift = where(logical_and(at_max, isfinite(a)), subtract(a, a_max), np.asarray(0, d.np))
    ones = where(at_max, exp(shift), np.asarray(0, d.np))
    a = where(at_max, np.asarray(-np.inf, d.np), a)
    counted = ones if b is None else multiply(b, ones)
    m = reduce_sum(counted, axes, keepdims=True)
    e = exp(subtract(a, a_max))
    if b is not None:
        e = multiply(b, e)
    s = reduce_sum(e, axes, keepdims=True)
    s = where(equal(s, 0), s, true_divide(s, m))
    sgn = multiply(sign(add(s, np.asarray(1, d.np))), sign(m))
    s = where(less(s, np.asarray(-1, d.np)), subtract(negative(s), np.asarray(2, d.np)), s)
    out = add(add(log1p(s), log(absolute(m))), a_max)
    if not return_sign:
        out = where(less(sgn, np.asarray(0, d.np)), np.asarray(np.nan, d.np), out)
    return out, sgn


# -- scipy.stats.norm.logpdf -------------------------------------------------------------------

_NORM_LOG_C = np.log(np.sqrt(2 * np.pi))     # SciPy's _norm_pdf_logC


def _strong(x):
    """An argument as np.asarray makes it: Python scalars become int64/float64 arrays, and a
    list holding traced values is stacked (np.asarray itself would refuse them)."""
    if isinstance(x, Tracer):
        return convert(lift(x), dt(x))
    if isinstance(x, (list, tuple)) and has_tracer(x):
        return lift(x)
    return lift(np.asarray(x))


def norm_logpdf(x, loc=0, scale=1):
    """scipy.stats.norm.logpdf: ``-z**2/2 - log(sqrt(2 pi)) - log(scale)`` in float64 with
    ``z = (x - loc) / scale``; nan where ``scale <= 0`` or z is nan, -inf where z is infinite
    (the formula's own value there, so that its derivative is JAX's -z / scale = -+inf: a -inf
    constant chosen there made it NaN, a zero cotangent times the infinite partial)."""
    x, loc, scale = _strong(x), _strong(loc), _strong(scale)
    z = convert(true_divide(subtract(x, loc), scale), dtypes.float64)
    good_scale = greater(scale, 0)
    inside = logical_and(logical_not(isnan(z)), good_scale)
    value = subtract(true_divide(negative(power(z, 2)), 2.0), _NORM_LOG_C)
    value = subtract(value, log(scale))
    bad = logical_or(logical_not(good_scale), isnan(z))
    shape = inside.shape
    return where(inside, broadcast_to(value, shape),
                 where(broadcast_to(bad, shape), np.nan, -np.inf))


# -- scipy.stats.multivariate_normal.logpdf ----------------------------------------------------

_LOG_2PI = np.log(2 * np.pi)


def multivariate_normal_logpdf(x, mean=None, cov=1, allow_singular=False):
    """scipy.stats.multivariate_normal.logpdf by a Cholesky factor ``L`` of ``cov`` (SciPy
    uses an eigendecomposition: the same values up to rounding): ``-(dim log(2 pi) +
    log det cov + |L^-1 (x - mean)|^2) / 2``. A ``cov`` that is not positive definite raises
    LinAlgError when the program runs, as SciPy does for ``allow_singular=False``."""
    if allow_singular:
        raise unsupported("multivariate_normal.logpdf(..., allow_singular=True) on traced "
                          "values (a pseudo-determinant needs an eigendecomposition)",
                          "pass a positive definite cov and allow_singular=False")
    dim, mean, cov = _mvn_parameters(mean, cov)
    x = convert(lift(x), dtypes.float64)
    if x.ndim == 0:
        x = reshape(x, (1,))
    elif x.ndim == 1:
        x = reshape(x, (x.shape[0], 1) if dim == 1 else (1, x.shape[0]))
    dev = subtract(x, mean)                                  # [..., dim]
    chol = batched(ops.cholesky, cov)
    # the diagonal as a sum of chol * eye (exact: the rest adds zeros) fuses with its log
    log_det = multiply(2.0, reduce_sum(log(reduce_sum(multiply(chol, np.eye(dim)), -1))))
    rows = reshape(dev, (-1, dim))
    white = batched(ops.triangular_solve, chol, swapaxes(rows, 0, 1), lower=True)
    maha = reshape(reduce_sum(multiply(white, white), 0), dev.shape[:-1])
    out = multiply(-0.5, add(add(dim * _LOG_2PI, log_det), maha))
    return squeeze(out)


def _mvn_parameters(mean, cov):
    """SciPy's _process_parameters_psd: dim, and mean and cov as a float64 vector and matrix."""
    cov = convert(lift(1.0 if cov is None else cov), dtypes.float64)
    if mean is None:
        dim = 1 if cov.ndim < 2 else cov.shape[0]
        mean = constant(np.zeros(dim), trace=cov._trace)
    else:
        mean = convert(lift(mean), dtypes.float64)
        dim = mean.size
    if dim == 1:
        mean, cov = reshape(mean, (1,)), reshape(cov, (1, 1))
    if mean.ndim != 1 or mean.shape[0] != dim:
        raise numpy_error(ValueError, f"Array 'mean' must be a vector of length {dim}.",
                          "pass a 1-D mean")
    if cov.ndim == 0:
        cov = multiply(cov, np.eye(dim))
    elif cov.ndim == 1:
        cov = diag(cov)
    elif cov.ndim > 2:
        raise numpy_error(ValueError, "Array 'cov' must be at most two-dimensional, but "
                          f"cov.ndim = {cov.ndim}", "pass a matrix, a vector or a scalar")
    elif cov.shape != (dim, dim):
        rows, cols = cov.shape
        what = (f"Array 'cov' must be square if it is two dimensional, but cov.shape = "
                f"{cov.shape}." if rows != cols else f"Dimension mismatch: array 'cov' is of "
                f"shape {cov.shape}, but 'mean' is a vector of length {dim}.")
        raise numpy_error(ValueError, what, "cov must be dim x dim")
    return dim, mean, cov

