"""LAPACK for the generated linear algebra kernels: batched solve, Cholesky and slogdet as NumPy
computes them, and triangular solves.

Each helper takes C-contiguous batches (``[q, n, n]`` matrices, ``[q, n, k]`` right-hand sides)
and loops over the batch. Like NumPy's ``umath_linalg``, it copies each matrix into a Fortran-
ordered scratch, calls the same LAPACK routine (``gesv``, ``potrf`` with the lower triangle,
``getrf``) and copies the result back, so the results and the errors are NumPy's: "Singular
matrix" and "Matrix is not positive definite" as ``np.linalg.LinAlgError``, and ``(0, -inf)``
from slogdet for a singular matrix. NaN inputs go to LAPACK as they are (Numba's own
``np.linalg`` would refuse them). The routines are SciPy's, called through Numba's C helpers
(``numba_xgesv``, ...), linked by name, so kernels that call them stay cacheable; they run on
the calling thread (the linear algebra kernels are serial), which resolves SciPy's functions
on first use with the GIL (see blas.py). LAPACK has no batched triangular solve here, so that
one is loops: a row of the result at a time, in place.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np.linalg import F_INT_nptype, _LAPACK

_KINDS = {types.float32: ord("s"), types.float64: ord("d")}
_LOWER = ord("L")


def _gesv(a, ipiv, b):
    """LAPACK gesv on the column-major ``n * n`` scratch ``a`` and ``n * k`` scratch ``b``."""
    raise NotImplementedError("called from compiled code only")


def _potrf(a, n):
    raise NotImplementedError("called from compiled code only")


def _getrf(a, ipiv):
    raise NotImplementedError("called from compiled code only")


@overload(_gesv)
def _gesv_typed(a, ipiv, b):
    fn, kind = _LAPACK().numba_xgesv(a.dtype), _KINDS[a.dtype]

    def impl(a, ipiv, b):
        n = ipiv.size
        return fn(kind, n, b.size // n, a.ctypes, n, ipiv.ctypes, b.ctypes, n)
    return impl


@overload(_potrf)
def _potrf_typed(a, n):
    fn, kind = _LAPACK().numba_xxpotrf(a.dtype), _KINDS[a.dtype]

    def impl(a, n):
        return fn(kind, _LOWER, n, a.ctypes, n)
    return impl


@overload(_getrf)
def _getrf_typed(a, ipiv):
    fn, kind = _LAPACK().numba_xxgetrf(a.dtype), _KINDS[a.dtype]

    def impl(a, ipiv):
        n = ipiv.size
        return fn(kind, n, n, a.ctypes, n, ipiv.ctypes)
    return impl


@njit(inline="always")
def _to_fortran(src, dst):
    """The 2-D ``src`` into the 1-D ``dst`` in column-major order."""
    rows, cols = src.shape
    for j in range(cols):
        for i in range(rows):
            dst[j * rows + i] = src[i, j]


@njit(inline="always")
def _check(info, message):
    if info < 0:
        raise RuntimeError("tracejit: LAPACK was called with an invalid argument")
    if info > 0:
        raise np.linalg.LinAlgError(message)


@njit(cache=True, error_model="numpy")
def solve(a, b, x):
    """``x[q] = inv(a[q]) @ b[q]`` by gesv, as np.linalg.solve."""
    q, n, k = b.shape
    if n == 0:
        return
    fa = np.empty(n * n, a.dtype)
    fb = np.empty(n * k, a.dtype)
    ipiv = np.empty(n, F_INT_nptype)
    for p in range(q):
        _to_fortran(a[p], fa)
        _to_fortran(b[p], fb)
        _check(_gesv(fa, ipiv, fb), "Singular matrix")
        for j in range(k):
            for i in range(n):
                x[p, i, j] = fb[j * n + i]


@njit(cache=True, error_model="numpy")
def cholesky(a, out):
    """``out[q]``: the lower Cholesky factor of ``a[q]`` (its lower triangle read), by potrf."""
    q, n, _ = a.shape
    if n == 0:
        return
    fa = np.empty(n * n, a.dtype)
    for p in range(q):
        _to_fortran(a[p], fa)
        _check(_potrf(fa, n), "Matrix is not positive definite")
        for i in range(n):
            for j in range(n):
                out[p, i, j] = fa[j * n + i] if j <= i else 0


@njit(cache=True, error_model="numpy")
def slogdet(a, out):
    """``out[q] = (sign, log|det a[q]|)`` from getrf, in NumPy's order of operations."""
    q, n, _ = a.shape
    fa = np.empty(n * n, a.dtype)
    ipiv = np.empty(n, F_INT_nptype)
    zero = np.zeros(1, a.dtype)[0]
    for p in range(q):
        sign, logdet = zero + 1, zero
        if n > 0:
            _to_fortran(a[p], fa)
            info = _getrf(fa, ipiv)
            if info < 0:
                _check(info, "")
            if info > 0:
                out[p, 0], out[p, 1] = zero, -np.inf
                continue
            for i in range(n):
                if ipiv[i] != i + 1:
                    sign = -sign
            for i in range(n):
                d = fa[i * n + i]
                if d < zero:
                    sign, d = -sign, -d
                logdet += np.log(d)
        out[p, 0], out[p, 1] = sign, logdet


@njit(cache=True, error_model="numpy")
def triangular_solve(a, b, x, lower):
    """``x[q] = inv(a[q]) @ b[q]`` for triangular ``a[q]`` (only its lower, or upper, triangle
    read): substitution, a row of x at a time (a zero on the diagonal gives inf/nan)."""
    q, n, k = b.shape
    for p in range(q):
        for s in range(n):
            i = s if lower else n - 1 - s
            lo, hi = (0, i) if lower else (i + 1, n)
            for j in range(k):
                x[p, i, j] = b[p, i, j]
            for m in range(lo, hi):
                f = a[p, i, m]
                for j in range(k):
                    x[p, i, j] -= f * x[p, m, j]
            d = a[p, i, i]
            for j in range(k):
                x[p, i, j] /= d
