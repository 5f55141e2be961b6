"""Elementwise derivatives, written once as partial derivatives d out / d operand.

Both modes are built from this table: reverse mode multiplies the output cotangent by each
partial, forward mode sums tangent * partial over the operands. A partial may be the Python
number 1 or -1 (no multiply is emitted) or None (that operand has no derivative).

Conventions at points where the derivative is not defined:
- ``abs`` at 0: 0 (the subgradient ``sign(0)``); ``sign``, ``floor``, ``ceil``, ``round`` are
  not differentiable in the registry and stop the gradient (their derivative is 0 a.e.).
- ``maximum`` / ``minimum`` on ties: half of the cotangent to each operand (as JAX).
- ``power`` x**y: d/dx is 0 at 0**0 (no NaN), d/dy is 0 where x == 0.
- ``remainder``: d/dx = 1, d/dy = -floor(x / y) (the derivative of x - floor(x/y)*y);
  ``fmod`` likewise with trunc (x - trunc(x/y)*y).
- ``hypot`` at (0, 0): 0 for both operands (no NaN).
- ``copysign(x, y)``: d/dx = +-1 (whether the sign of x flips), d/dy = 0.
- ``logaddexp`` with infinities: the limits (1 and 0 at (inf, 1)), and 1/2 each at (-inf,
  -inf) and (inf, inf), the limit along x == y (JAX gives NaN there).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import ops
from ..ir.registry import rule_table
from ..tracer.numpy.arithmetic import sign, where
from ..tracer.numpy.shapes import full
from .build import mask, op

PARTIALS, partials = rule_table()


def scale(t, p):
    """t * p, where p may be the Python number 1 or -1."""
    if p is None:
        return None
    if isinstance(p, (int, float)) and p == 1:
        return t
    if isinstance(p, (int, float)) and p == -1:
        return -t
    return t * p


# -- unary --------------------------------------------------------------------------------------
@partials(ops.neg)
def _(x, out): return [-1]
@partials(ops.abs)
def _(x, out): return [sign(x)]
@partials(ops.exp)
def _(x, out): return [out]
@partials(ops.expm1)
def _(x, out): return [out + 1]
@partials(ops.log)
def _(x, out): return [1 / x]
@partials(ops.log1p)
def _(x, out): return [1 / (x + 1)]
@partials(ops.sqrt)
def _(x, out): return [0.5 / out]
@partials(ops.sin)
def _(x, out): return [np.cos(x)]
@partials(ops.cos)
def _(x, out): return [-np.sin(x)]
@partials(ops.tan)
def _(x, out): return [1 + out * out]
@partials(ops.tanh)
def _(x, out): return [1 - out * out]
@partials(ops.sinh)
def _(x, out): return [np.cosh(x)]
@partials(ops.cosh)
def _(x, out): return [np.sinh(x)]
@partials(ops.arcsin)
def _(x, out): return [1 / np.sqrt(1 - x * x)]
@partials(ops.arccos)
def _(x, out): return [-1 / np.sqrt(1 - x * x)]
@partials(ops.arctan)
def _(x, out): return [1 / (1 + x * x)]
@partials(ops.arcsinh)
def _(x, out): return [1 / np.sqrt(x * x + 1)]
@partials(ops.arctanh)
def _(x, out): return [1 / (1 - x * x)]
@partials(ops.erf)
def _(x, out): return [(2 / math.sqrt(math.pi)) * np.exp(-(x * x))]
@partials(ops.logistic)
def _(x, out): return [out * (1 - out)]
@partials(ops.relu)
def _(x, out): return [mask(out > 0, out)]
@partials(ops.gammaln)
def _(x, out): return [op(ops.digamma, x)]


@partials(ops.digamma)
def _(x, out): return [trigamma(x)]


def trigamma(x):
    """polygamma(1, x), digamma's derivative (it was refused: the Hessian of a loss with
    gammaln, which JAX gives), from elementary ops, so that it has derivatives of its own:
    trigamma(z) = sum 1/(z + k)^2 for k < 10, plus the asymptotic series at z + 10 (within
    1e-12 relative for z >= 1/2); below 1/2, the reflection pi^2 / sin^2(pi x) -
    trigamma(1 - x) (inf at 0, -1, ...). Each branch is computed where it is finite."""
    low = x < 0.5
    z = where(low, 1 - x, x)
    total = 1 / (z * z)
    for k in range(1, 10):
        total = total + 1 / ((z + k) * (z + k))
    w = z + 10
    v = 1 / (w * w)
    total = total + (1 + (0.5 + (1 / 6 + (-1 / 30 + (1 / 42 + (-1 / 30 + 5 / 66 * v) * v)
                                         * v) * v) / w) / w) / w
    s = np.sin(math.pi * where(low, x, 0.5))
    return where(low, math.pi ** 2 / (s * s) - total, total)


# -- binary -------------------------------------------------------------------------------------
@partials(ops.add)
def _(x, y, out): return [1, 1]
@partials(ops.sub)
def _(x, y, out): return [1, -1]
@partials(ops.mul)
def _(x, y, out): return [y, x]
@partials(ops.div)
def _(x, y, out): return [1 / y, -out / y]


@partials(ops.maximum)
def _(x, y, out):
    gx = mask(x > y, x) + 0.5 * mask(x == y, x)
    return [gx, 1 - gx]


@partials(ops.minimum)
def _(x, y, out):
    gx = mask(x < y, x) + 0.5 * mask(x == y, x)
    return [gx, 1 - gx]


@partials(ops.power)
def _(x, y, out):
    # d/dx is 0 at 0 ** 0 only (the exponent y - 1 made 0 there: no 0 * inf). A where over
    # every y == 0 made d/dx a constant there, so d2/dx dy of x ** y at y = 0, 1 / x, was 0
    # (a Hessian that was not symmetric).
    singular = (x == 0) & (y == 0)
    dx = where(singular, 0.0, y * np.power(x, where(singular, 1, y) - 1))
    safe_x = where(x == 0, 1.0, x)
    dy = where(x == 0, 0.0, out * np.log(safe_x))
    return [dx, dy]


@partials(ops.remainder)
def _(x, y, out): return [1, -np.floor(x / y)]


@partials(ops.arctan2)
def _(y, x, out):
    r = x * x + y * y
    return [x / r, -y / r]


@partials(ops.hypot)
def _(x, y, out):
    safe = where(out == 0, 1.0, out)
    return [x / safe, y / safe]


@partials(ops.copysign)
def _(x, y, out):
    one = full(x.shape, 1.0, x.dtype)
    return [op(ops.copysign, one, out) * op(ops.copysign, one, x), None]


@partials(ops.logaddexp)
def _(x, y, out):
    # exp(x - out) is logistic(x - y): finite where x or y is infinite (exp(inf - inf) is NaN),
    # and 1/2 each where x and y are one infinity, so log-space code whose masked entries are
    # logaddexp(-inf, -inf) gets no NaN gradient.
    d = where((x == y) & np.isinf(x), 0.0, x - y)
    return [op(ops.logistic, d), op(ops.logistic, -d)]


@partials(ops.fmod)
def _(x, y, out): return [1, -np.trunc(x / y)]
