"""Derivatives of the linear algebra ops (ir/linalg_ops.py), both modes, registered in
vjp_rules.VJP_RULES and jvp_rules.JVP_RULES (autodiff/__init__.py imports this module).

With ``x = solve(a, b)``: ``db = solve(a.T, g)``, ``da = -db @ x.T`` (so ``inv``, a solve
with the identity, gets ``-a^-T g a^-T``); triangular_solve likewise, its ``da`` masked to the
triangle it reads. ``slogdet``'s log|det| has ``g * a^-T`` (its sign, piecewise constant, has
none), so ``det = sign * exp(logabsdet)`` gets ``g * det * a^-T``; at a singular matrix the
inverse these need does not exist, and the derivative raises NumPy's LinAlgError when it runs.

``cholesky`` follows Murray (2016), as JAX and PyTorch do: the tangent of ``a`` is taken
symmetric, ``sym(da) = (da + da.T) / 2``, so ``dl = l phi(l^-1 sym(da) l^-T)`` where ``phi``
keeps the lower triangle and halves the diagonal, and the cotangent of ``a`` is symmetric:
``sym(l^-T phi(l.T g) l^-1)``. NumPy reads only the lower triangle, so for a perturbation that
is not symmetric these differ from NumPy's finite differences; for every symmetric one (what a
covariance built as ``x @ x.T + c * eye`` varies by) they agree.
"""
from __future__ import annotations

import numpy as np

from ..ir import ops
from ..tracer.numpy.arithmetic import equal, greater, where
from ..tracer.numpy.lifting import reshape
from ..tracer.numpy.linalg import triangle
from ..tracer.numpy.shapes import iota
from .build import add_any, op, sum_axes, swap_last, zeros
from .jvp_rules import jvp_rule
from .vjp_rules import vjp_rule

_tril, _triu = triangle(False), triangle(True)


def _eye(a):
    """The identity in ``a``'s (square, batched) shape and dtype."""
    eye = op(ops.constant, value=np.eye(a.shape[-1], dtype=a.dtype))
    return op(ops.broadcast_in_dim, eye, shape=a.shape, dims=(a.ndim - 2, a.ndim - 1))


def _phi(x):
    """The lower triangle of ``x`` with its diagonal halved."""
    n = x.shape[-1]
    r, c = iota((n, n), 0, trace=x._trace), iota((n, n), 1, trace=x._trace)
    return where(greater(r, c), x, where(equal(r, c), x * 0.5, np.zeros((), x.dtype)))


def _lower_solve(l, b):
    return op(ops.triangular_solve, l, b, lower=True)


def _upper_solve(u, b):
    return op(ops.triangular_solve, u, b, lower=False)


# -- solve ------------------------------------------------------------------------------------

@vjp_rule(ops.solve)
def _(ct, a, b, out):
    gb = op(ops.solve, swap_last(a), ct)
    return [-op(ops.matmul, gb, swap_last(out)), gb]


@jvp_rule(ops.solve)
def _(ts, a, b, out):
    ta, tb = ts
    return op(ops.solve, a, add_any(tb, None if ta is None else -op(ops.matmul, ta, out)))


@vjp_rule(ops.triangular_solve)
def _(ct, a, b, out, lower):
    gb = op(ops.triangular_solve, swap_last(a), ct, lower=not lower)
    ga = -op(ops.matmul, gb, swap_last(out))
    return [_tril(ga) if lower else _triu(ga), gb]


@jvp_rule(ops.triangular_solve)
def _(ts, a, b, out, lower):
    ta, tb = ts
    if ta is not None:
        ta = -op(ops.matmul, _tril(ta) if lower else _triu(ta), out)
    return op(ops.triangular_solve, a, add_any(tb, ta), lower=lower)


# -- cholesky ---------------------------------------------------------------------------------

@vjp_rule(ops.cholesky)
def _(ct, a, out):
    lt = swap_last(out)
    w = _upper_solve(lt, _phi(op(ops.matmul, lt, ct)))        # l^-T phi(l.T g)
    s = swap_last(_upper_solve(lt, swap_last(w)))              # ... l^-1
    return [(s + swap_last(s)) * 0.5]


@jvp_rule(ops.cholesky)
def _(ts, a, out):
    (ta,) = ts
    sym = (ta + swap_last(ta)) * 0.5
    inner = _lower_solve(out, swap_last(_lower_solve(out, sym)))   # l^-1 sym l^-T
    return op(ops.matmul, out, _phi(inner))


# -- slogdet ----------------------------------------------------------------------------------

@vjp_rule(ops.slogdet)
def _(ct, a, out):
    batch = a.shape[:-2]
    g = op(ops.slice, ct, starts=(0,) * len(batch) + (1,), stops=batch + (2,),
           steps=(1,) * (len(batch) + 1))                     # the logabsdet part
    inv_t = op(ops.solve, swap_last(a), _eye(a))
    return [reshape(g, batch + (1, 1)) * inv_t]


@jvp_rule(ops.slogdet)
def _(ts, a, out):
    (ta,) = ts
    batch = a.shape[:-2]
    trace = sum_axes(op(ops.solve, a, ta) * _eye(a), [a.ndim - 2, a.ndim - 1])
    return op(ops.concatenate, zeros(out._value.type.with_shape(batch + (1,))),
              reshape(trace, batch + (1,)), axis=len(batch))
