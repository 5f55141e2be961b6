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

The decompositions are one LAPACK call each, as NumPy's, and so one op each: their several
outputs are packed into the one result (zeros where a part is narrower than the result), and
the tracer slices the parts out. Their matrices need not be square (but eigh's).

- ``eigh(a, lower, vectors)``: syevd of the symmetric ``a``, its lower (upper) triangle read.
  ``vectors``: ``[..., n + 1, n]``, the eigenvectors as the columns of rows ``0..n-1`` and
  the eigenvalues (ascending) in row ``n`` (``np.linalg.eigh``); else ``[..., n]``, the
  eigenvalues alone (syevd without vectors: ``np.linalg.eigvalsh``).
- ``svd(a, full_matrices, compute_uv)``: gesdd of ``a`` ``[..., m, n]``, ``k = min(m, n)``.
  ``compute_uv``: ``[..., m + 1 + nv, max(mu, n)]`` with ``mu = nv = k`` (``m`` and ``n``
  if ``full_matrices``): ``u`` ``[m, mu]`` in rows ``0..m-1``, the singular values
  (descending) in row ``m``, ``vh`` ``[nv, n]`` in the rows after. Else ``[..., k]``, the
  singular values alone (gesdd's cheaper path, whose values may differ in the last bits).
- ``qr(a, mode)``: geqrf and orgqr of ``a`` ``[..., m, n]``, ``k = min(m, n)``. ``mode``
  "reduced" (``mq = k``) or "complete" (``mq = m``): ``[..., m, mq + n]``, ``q`` ``[m, mq]``
  in the first columns and ``r`` ``[mq, n]`` in the last ``n`` (its rows from ``mq`` on,
  zero). "r": ``[..., k, n]``, ``r`` alone (geqrf only).
- As NumPy's, they compute in float64 (a float32 result is rounded from it) and raise its
  ``LinAlgError`` "Eigenvalues did not converge" and "SVD did not converge" (a nan in ``a``
  too: gesdd refuses one).
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


def _float_matrices(name: str, t: TensorType):
    if not t.dtype.is_float:
        raise IRTypeError(f"{name} needs float operands, got {t.dtype}")
    if t.ndim < 2:
        raise IRTypeError(f"{name} needs matrices [..., m, n], got {t}")


def _eigh_rule(ts, attrs):
    (a,) = ts
    _square("eigh", a)
    n = a.shape[-1]
    return [a.with_shape(a.shape[:-2] + ((n + 1, n) if attrs["vectors"] else (n,)))]


def _eigh_impl(a, lower, vectors):
    uplo = "L" if lower else "U"
    if not vectors:
        return np.linalg.eigvalsh(a, uplo)
    w, v = np.linalg.eigh(a, uplo)
    return np.concatenate([v, w[..., None, :]], axis=-2)


def svd_sizes(m: int, n: int, full_matrices: bool) -> tuple[int, int, int]:
    """``(k, mu, nv)``: the number of singular values, of u's columns and of vh's rows."""
    k = min(m, n)
    return (k, m, n) if full_matrices else (k, k, k)


def _svd_rule(ts, attrs):
    (a,) = ts
    _float_matrices("svd", a)
    m, n = a.shape[-2:]
    k, mu, nv = svd_sizes(m, n, attrs["full_matrices"])
    if not attrs["compute_uv"]:
        return [a.with_shape(a.shape[:-2] + (k,))]
    return [a.with_shape(a.shape[:-2] + (m + 1 + nv, max(mu, n)))]


def _widen(x, width: int):
    """``x`` with zero columns appended up to ``width``."""
    pad = [(0, 0)] * (x.ndim - 1) + [(0, width - x.shape[-1])]
    return np.pad(x, pad)


def _svd_impl(a, full_matrices, compute_uv):
    if not compute_uv:
        return np.linalg.svd(a, compute_uv=False)
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    width = max(u.shape[-1], vh.shape[-1])
    return np.concatenate([_widen(u, width), _widen(s[..., None, :], width),
                           _widen(vh, width)], axis=-2)


QR_MODES = ("reduced", "complete", "r")


def qr_columns(m: int, n: int, mode: str) -> int:
    """``mq``: the number of q's columns (and of r's rows)."""
    return m if mode == "complete" else min(m, n)


def _qr_rule(ts, attrs):
    (a,) = ts
    _float_matrices("qr", a)
    if attrs["mode"] not in QR_MODES:
        raise IRTypeError(f"qr mode must be one of {QR_MODES}, got {attrs['mode']!r}")
    m, n = a.shape[-2:]
    if attrs["mode"] == "r":
        return [a.with_shape(a.shape[:-2] + (min(m, n), n))]
    return [a.with_shape(a.shape[:-2] + (m, qr_columns(m, n, attrs["mode"]) + n))]


def _qr_impl(a, mode):
    if mode == "r":
        return np.linalg.qr(a, mode="r")
    q, r = np.linalg.qr(a, mode=mode)
    rows = [(0, 0)] * (a.ndim - 2) + [(0, a.shape[-2] - r.shape[-2]), (0, 0)]
    return np.concatenate([q, np.pad(r, rows)], axis=-1)


eigh = register(OpDef("eigh", 1, {"lower": "bool", "vectors": "bool"}, _eigh_rule, _eigh_impl,
                      "linalg", kinds="f", numpy=("linalg.eigh", "linalg.eigvalsh")))
svd = register(OpDef("svd", 1, {"full_matrices": "bool", "compute_uv": "bool"}, _svd_rule,
                     _svd_impl, "linalg", kinds="f",
                     numpy=("linalg.svd", "linalg.svdvals", "linalg.norm", "linalg.pinv",
                            "linalg.matrix_rank", "linalg.cond")))
qr = register(OpDef("qr", 1, {"mode": "str"}, _qr_rule, _qr_impl, "linalg", kinds="f",
                    numpy=("linalg.qr",)))
