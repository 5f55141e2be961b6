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
from llvmlite import ir as llvm_ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.linalg import F_INT_nptype

_KINDS = {types.float32: ord("s"), types.float64: ord("d")}
_LOWER, _UPPER = ord("L"), ord("U")
_JOB_VECTORS, _JOB_NONE, _JOB_ALL, _JOB_SOME = ord("V"), ord("N"), ord("A"), ord("S")


def _external(name: str, spec: str, array, params: tuple):
    """(signature, code generator) of a call of Numba's C helper ``name`` for LAPACK, its
    first argument the kind ("s" or "d") of ``array``'s dtype, then one per letter of
    ``spec``: "c" a char (an integer narrowed to 8 bits), "i" an intp, "a" an array's data.
    An intrinsic, not an overload of a Python stand-in: codegen/direct compiles it (its
    IntrinsicContext), where Numba compiled every kernel with a LAPACK call (2-8 s each)."""
    if not isinstance(array, types.Array) or array.dtype not in _KINDS:
        return None
    kind = _KINDS[array.dtype]

    def codegen(context, builder, signature, args):
        i8, vp = llvm_ir.IntType(8), llvm_ir.IntType(8).as_pointer()
        ip = context.get_value_type(types.intp)
        argtypes, values = [i8], [i8(kind)]
        for letter, t, v in zip(spec, signature.args, args):
            if letter == "a":
                ary = context.make_array(t)(context, builder, v)
                argtypes.append(vp)
                values.append(builder.bitcast(ary.data, vp))
            elif letter == "c":
                argtypes.append(i8)
                values.append(builder.trunc(v, i8))
            else:
                argtypes.append(ip)
                values.append(v)
        fn = cgutils.get_or_insert_function(
            builder.module, llvm_ir.FunctionType(llvm_ir.IntType(32), argtypes), name)
        return builder.call(fn, values)

    sig = types.int32(*[t if letter == "a" else types.intp for letter, t in zip(spec, params)])
    return sig, codegen


@intrinsic
def _xgesv(typingctx, n, nrhs, a, lda, ipiv, b, ldb):
    return _external("numba_xgesv", "iiaiaai", a, (n, nrhs, a, lda, ipiv, b, ldb))


@intrinsic
def _xxpotrf(typingctx, uplo, n, a, lda):
    return _external("numba_xxpotrf", "ciai", a, (uplo, n, a, lda))


@intrinsic
def _xxgetrf(typingctx, m, n, a, lda, ipiv):
    return _external("numba_xxgetrf", "iiaia", a, (m, n, a, lda, ipiv))


@intrinsic
def _ez_xxxevd(typingctx, jobz, uplo, n, a, lda, w):
    return _external("numba_ez_xxxevd", "cciaia", a, (jobz, uplo, n, a, lda, w))


@intrinsic
def _ez_gesdd(typingctx, jobz, m, n, a, lda, s, u, ldu, vt, ldvt):
    return _external("numba_ez_gesdd", "ciiaiaaiai", a,
                     (jobz, m, n, a, lda, s, u, ldu, vt, ldvt))


@intrinsic
def _ez_geqrf(typingctx, m, n, a, lda, tau):
    return _external("numba_ez_geqrf", "iiaia", a, (m, n, a, lda, tau))


@intrinsic
def _ez_xxgqr(typingctx, m, n, k, a, lda, tau):
    return _external("numba_ez_xxgqr", "iiiaia", a, (m, n, k, a, lda, tau))


@njit(inline="always")
def _gesv(a, ipiv, b):
    """LAPACK gesv on the column-major ``n * n`` scratch ``a`` and ``n * k`` scratch ``b``."""
    n = ipiv.size
    return _xgesv(n, b.size // n, a, n, ipiv, b, n)


@njit(inline="always")
def _potrf(a, n):
    return _xxpotrf(_LOWER, n, a, n)


@njit(inline="always")
def _getrf(a, ipiv):
    n = ipiv.size
    return _xxgetrf(n, n, a, n, ipiv)


@njit(inline="always")
def _syevd(a, w, jobz, lower):
    n = w.size
    return _ez_xxxevd(jobz, _LOWER if lower else _UPPER, n, a, n, w)


@njit(inline="always")
def _gesdd(a, m, n, s, u, ldu, vt, ldvt, jobz):
    return _ez_gesdd(jobz, m, n, a, m, s, u, ldu, vt, ldvt)


@njit(inline="always")
def _geqrf(a, m, n, tau):
    return _ez_geqrf(m, n, a, m, tau)


@njit(inline="always")
def _orgqr(a, m, n, k, tau):
    return _ez_xxgqr(m, n, k, a, m, tau)


@njit(inline="always")
def _to_fortran(src, dst):
    """The 2-D ``src`` into the 1-D ``dst`` in column-major order."""
    rows, cols = src.shape
    for j in range(cols):
        for i in range(rows):
            dst[j * rows + i] = src[i, j]


@njit(inline="always")
def _invalid(info):
    """A negative ``info``: LAPACK refused an argument (a bug here, not the user's). A
    positive one is the routine's own failure, raised at each call with NumPy's message (a
    message is no value codegen/direct can pass)."""
    if info < 0:
        raise RuntimeError("tracejit: LAPACK was called with an invalid argument")


@njit(error_model="numpy")
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
        info = _gesv(fa, ipiv, fb)
        _invalid(info)
        if info > 0:
            raise np.linalg.LinAlgError("Singular matrix")
        for j in range(k):
            for i in range(n):
                x[p, i, j] = fb[j * n + i]


@njit(error_model="numpy")
def cholesky(a, out):
    """``out[q]``: the lower Cholesky factor of ``a[q]`` (its lower triangle read), by potrf."""
    q, n, _ = a.shape
    if n == 0:
        return
    fa = np.empty(n * n, a.dtype)
    for p in range(q):
        _to_fortran(a[p], fa)
        info = _potrf(fa, n)
        _invalid(info)
        if info > 0:
            raise np.linalg.LinAlgError("Matrix is not positive definite")
        for i in range(n):
            for j in range(n):
                out[p, i, j] = fa[j * n + i] if j <= i else 0


@njit(error_model="numpy")
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
                _invalid(info)
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


@njit(error_model="numpy")
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


@njit(error_model="numpy")
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
        info = _syevd(fa, w, _JOB_VECTORS if vectors else _JOB_NONE, lower)
        _invalid(info)
        if info > 0:
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
        if vectors:
            _from_fortran(fa, n, n, out[p], 0, 0)
        for j in range(n):
            out[p, last, j] = w[j]


@njit(error_model="numpy")
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
        info = _gesdd(fa, m, n, s, fu, ldu, fvt, ldvt, jobz)
        _invalid(info)
        if info > 0:
            raise np.linalg.LinAlgError("SVD did not converge")
        if compute_uv:
            _from_fortran(fu, m, mu, out[p], 0, 0)
            _from_fortran(fvt, nv, n, out[p], m + 1, 0)
        for j in range(k):
            out[p, srow, j] = s[j]


@njit(error_model="numpy")
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
        _invalid(_geqrf(fa, m, n, tau))
        for i in range(k):
            for j in range(i, n):
                out[p, i, c0 + j] = fa[j * m + i]
        if not r_only:
            _invalid(_orgqr(fa, m, mq, k, tau))
            _from_fortran(fa, m, mq, out[p], 0, 0)
