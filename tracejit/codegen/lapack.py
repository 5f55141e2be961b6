"""LAPACK for the generated linear algebra kernels: batched solve, Cholesky, slogdet, eigh, svd
and qr as NumPy computes them, and triangular solves.

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

The decompositions (eigh by syevd, svd by gesdd, qr by geqrf and orgqr) write their packed
results (ir/linalg_ops.py says the layouts), zeros in the padding; NumPy's results for empty
matrices (identities for a full ``u``, ``vh`` or ``q``) are made here, since LAPACK refuses a
leading dimension of 0. gesdd refuses a nan in its matrix (an invalid argument, which NumPy
reports as "SVD did not converge"): checked before the call, with NumPy's error. As NumPy's,
they compute in float64 whatever the dtype, a float32 result rounded from it.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np.linalg import F_INT_nptype, _LAPACK

_KINDS = {types.float32: ord("s"), types.float64: ord("d")}
_LOWER, _UPPER = ord("L"), ord("U")
_JOB_VECTORS, _JOB_NONE, _JOB_ALL, _JOB_SOME = ord("V"), ord("N"), ord("A"), ord("S")


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


def _syevd(a, w, jobz, lower):
    raise NotImplementedError("called from compiled code only")


def _gesdd(a, m, n, s, u, ldu, vt, ldvt, jobz):
    raise NotImplementedError("called from compiled code only")


def _geqrf(a, m, n, tau):
    raise NotImplementedError("called from compiled code only")


def _orgqr(a, m, n, k, tau):
    raise NotImplementedError("called from compiled code only")


@overload(_syevd)
def _syevd_typed(a, w, jobz, lower):
    fn, kind = _LAPACK().numba_ez_xxxevd(a.dtype), _KINDS[a.dtype]

    def impl(a, w, jobz, lower):
        n = w.size
        return fn(kind, jobz, _LOWER if lower else _UPPER, n, a.ctypes, n, w.ctypes)
    return impl


@overload(_gesdd)
def _gesdd_typed(a, m, n, s, u, ldu, vt, ldvt, jobz):
    fn, kind = _LAPACK().numba_ez_gesdd(a.dtype), _KINDS[a.dtype]

    def impl(a, m, n, s, u, ldu, vt, ldvt, jobz):
        return fn(kind, jobz, m, n, a.ctypes, m, s.ctypes, u.ctypes, ldu, vt.ctypes, ldvt)
    return impl


@overload(_geqrf)
def _geqrf_typed(a, m, n, tau):
    fn, kind = _LAPACK().numba_ez_geqrf(a.dtype), _KINDS[a.dtype]

    def impl(a, m, n, tau):
        return fn(kind, m, n, a.ctypes, m, tau.ctypes)
    return impl


@overload(_orgqr)
def _orgqr_typed(a, m, n, k, tau):
    fn, kind = _LAPACK().numba_ez_xxgqr(a.dtype), _KINDS[a.dtype]

    def impl(a, m, n, k, tau):
        return fn(kind, m, n, k, a.ctypes, m, tau.ctypes)
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


@njit(inline="always")
def _from_fortran(src, rows, cols, dst, r0, c0):
    """The column-major ``rows * cols`` matrix in ``src`` into ``dst[r0:, c0:]``."""
    for i in range(rows):
        for j in range(cols):
            dst[r0 + i, c0 + j] = src[j * rows + i]


@njit(inline="always")
def _eye_into(dst, r0, c0, n):
    for i in range(n):
        dst[r0 + i, c0 + i] = 1


@njit(cache=True, error_model="numpy")
def eigh(a, out, lower, vectors):
    """syevd of each ``a[q]`` (its lower or upper triangle read): ``out[q]`` ``[n + 1, n]``,
    the eigenvectors in the columns of the first n rows and the eigenvalues in the last; or,
    without ``vectors``, ``[1, n]``: the eigenvalues (syevd's cheaper path, as eigvalsh)."""
    q, n, _ = a.shape
    if n == 0:
        return
    fa = np.empty(n * n, np.float64)
    w = np.empty(n, np.float64)
    last = out.shape[1] - 1
    for p in range(q):
        _to_fortran(a[p], fa)
        _check(_syevd(fa, w, _JOB_VECTORS if vectors else _JOB_NONE, lower),
               "Eigenvalues did not converge")
        if vectors:
            _from_fortran(fa, n, n, out[p], 0, 0)
        for j in range(n):
            out[p, last, j] = w[j]


@njit(cache=True, error_model="numpy")
def svd(a, out, full_matrices, compute_uv):
    """gesdd of each ``a[q]`` ``[m, n]``: ``out[q]`` holds u's m rows, the singular values' row
    and vh's rows, zero-padded to one width; or, without ``compute_uv``, ``[1, k]``: the
    singular values alone (gesdd's job "N", as np.linalg.svd(compute_uv=False))."""
    q, m, n = a.shape
    k = min(m, n)
    mu, nv = (m, n) if full_matrices else (k, k)
    srow = m if compute_uv else 0
    for p in range(q):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                out[p, i, j] = 0
    if k == 0:
        if compute_uv and full_matrices:
            for p in range(q):
                _eye_into(out[p], 0, 0, m)
                _eye_into(out[p], m + 1, 0, n)
        return
    fa = np.empty(m * n, np.float64)
    s = np.empty(k, np.float64)
    fu = np.empty(m * mu if compute_uv else 1, np.float64)
    fvt = np.empty(nv * n if compute_uv else 1, np.float64)
    jobz = (_JOB_ALL if full_matrices else _JOB_SOME) if compute_uv else _JOB_NONE
    ldu, ldvt = (m, nv) if compute_uv else (1, 1)
    for p in range(q):
        _to_fortran(a[p], fa)
        for i in range(m * n):
            if np.isnan(fa[i]):
                raise np.linalg.LinAlgError("SVD did not converge")
        _check(_gesdd(fa, m, n, s, fu, ldu, fvt, ldvt, jobz), "SVD did not converge")
        if compute_uv:
            _from_fortran(fu, m, mu, out[p], 0, 0)
            _from_fortran(fvt, nv, n, out[p], m + 1, 0)
        for j in range(k):
            out[p, srow, j] = s[j]


@njit(cache=True, error_model="numpy")
def qr(a, out, complete, r_only):
    """geqrf (and orgqr) of each ``a[q]`` ``[m, n]``: ``out[q]`` ``[m, mq + n]``, q in the
    first ``mq`` columns (``mq`` is m if ``complete``, else ``min(m, n)``) and r in the last
    n; or, with ``r_only``, ``[k, n]``: r alone, as np.linalg.qr(mode="r")."""
    q, m, n = a.shape
    k = min(m, n)
    mq = m if complete else k
    c0 = 0 if r_only else mq               # r's first column in out
    for p in range(q):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                out[p, i, j] = 0
    if k == 0:
        if not r_only:
            for p in range(q):
                _eye_into(out[p], 0, 0, mq)
        return
    fa = np.empty(m * max(n, mq), np.float64)
    tau = np.empty(k, np.float64)
    for p in range(q):
        _to_fortran(a[p], fa)
        _check(_geqrf(fa, m, n, tau), "")
        for i in range(k):
            for j in range(i, n):
                out[p, i, c0 + j] = fa[j * m + i]
        if not r_only:
            _check(_orgqr(fa, m, mq, k, tau), "")
            _from_fortran(fa, m, mq, out[p], 0, 0)
