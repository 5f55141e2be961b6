"""The linear algebra ops: factorizations and solves of the matrices in the last two dims.

Each takes float operands of one dtype whose leading dims are a batch (the same for every
operand: the tracer broadcasts, as for matmul) and whose last two are square matrices. Their
reference semantics are NumPy's (``np.linalg``), LAPACK underneath; a singular matrix in
``solve`` and a matrix that is not positive definite in ``cholesky`` raise NumPy's
``LinAlgError``, in every backend. ops.py re-exports them, so the other stages name them
``ops.solve`` like any op.

- ``solve(a, b)``: ``x`` with ``a @ x == b``; ``b`` is ``[..., n, k]`` (the tracer makes a
  vector right-hand side a column). ``np.linalg.inv`` is ``solve(a, eye)``, as in NumPy.
- ``triangular_solve(a, b, lower)``: the same for a triangular ``a``, which only its lower
  (upper) triangle and diagonal are read of; a zero on the diagonal gives inf/nan, no error.
  No NumPy name: the derivatives of ``cholesky`` and ``scipy.stats`` functions emit it.
- ``cholesky(a)``: lower-triangular ``l`` with ``a == l @ l.T``; reads ``a``'s lower triangle.
- ``slogdet(a)``: ``[..., 2]`` holding ``(sign, log|det a|)`` along the last dim (one LU
  factorization gives both: an op has one result); a singular ``a`` gives ``(0, -inf)``.
  ``np.linalg.det`` is ``sign * exp(logabsdet)``, which is how NumPy computes it too.
"""
from __future__ import annotations

import numpy as np

from .registry import IRTypeError, OpDef, register
from .types import TensorType


def _square(name: str, t: TensorType):
    if not t.dtype.is_float:
        raise IRTypeError(f"{name} needs float operands, got {t.dtype}")
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise IRTypeError(f"{name} needs square matrices [..., n, n], got {t}")


def _solve_rule(name):
    def rule(ts, attrs):
        a, b = ts
        _square(name, a)
        if b.dtype != a.dtype or b.ndim != a.ndim or b.shape[:-1] != a.shape[:-1]:
            raise IRTypeError(f"{name} needs a right-hand side [..., n, k] of a's batch, n and "
                              f"dtype, got {a} and {b}")
        return [b]
    return rule


def _square_rule(name, shape=None):
    def rule(ts, attrs):
        (a,) = ts
        _square(name, a)
        return [a if shape is None else a.with_shape(shape(a.shape))]
    return rule


def _triangular_solve_impl(a, b, lower):
    """Substitution, one row of the result at a time (the kernel's order, up to the sums)."""
    x = np.zeros(b.shape, b.dtype)
    n = a.shape[-1]
    for i in (range(n) if lower else range(n - 1, -1, -1)):
        done = slice(0, i) if lower else slice(i + 1, n)
        acc = b[..., i, :] - (a[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
        x[..., i, :] = acc / a[..., i, i, None]
    return x


def _slogdet_impl(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return np.stack([sign, logabsdet], axis=-1).astype(a.dtype, copy=False)


solve = register(OpDef("solve", 2, {}, _solve_rule("solve"),
                       lambda a, b: np.linalg.solve(a, b), "linalg", kinds="f",
                       numpy=("linalg.solve", "linalg.inv")))
triangular_solve = register(OpDef("triangular_solve", 2, {"lower": "bool"},
                                  _solve_rule("triangular_solve"), _triangular_solve_impl,
                                  "linalg", kinds="f", internal=True))
cholesky = register(OpDef("cholesky", 1, {}, _square_rule("cholesky"),
                          lambda a: np.linalg.cholesky(a), "linalg", kinds="f",
                          numpy=("linalg.cholesky",)))
slogdet = register(OpDef("slogdet", 1, {}, _square_rule("slogdet", lambda s: s[:-2] + (2,)),
                         _slogdet_impl, "linalg", kinds="f",
                         numpy=("linalg.slogdet", "linalg.det")))
