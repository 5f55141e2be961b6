"""np.linalg's decompositions on Tracers: eigh, eigvalsh, svd, svdvals, qr, and what NumPy
builds on svd (the matrix 2, -2 and nuclear norms, matrix_rank, pinv, cond).

Each decomposition is one op (ir/linalg_ops.py) whose one result packs its outputs; here they
are sliced out and returned as NumPy's namedtuples (``EighResult``, ``SVDResult``,
``QRResult``), so that they unpack and name their fields as NumPy's do. NumPy's argument rules
as linalg_solvers.py's: integers as float64, float32 kept (NumPy computes in float64 and
rounds; the ops do too), the batch dims over leading dims, NumPy's errors at the user's line.
"""
from __future__ import annotations

import numpy as np

from ...ir import dtypes, ops
from ...ir.linalg_ops import qr_columns, svd_sizes
from ..errors import numpy_error, unsupported
from .arithmetic import absolute, greater, true_divide, where
from .lifting import constant, convert, emit, lift, reshape
from .linalg_solvers import _LinAlgError, _dtype, _matrices, _two_dimensional, batched
from .math_functions import copysign
from .reductions import amax, amin, count_nonzero
from .reductions import any as reduce_any
from .reductions import sum as reduce_sum
from .shapes import moveaxis, swapaxes

EighResult = type(np.linalg.eigh(np.eye(1)))       # NumPy's namedtuples
SVDResult = type(np.linalg.svd(np.eye(1)))
QRResult = type(np.linalg.qr(np.eye(1)))


def _part(x, rows: tuple[int, int], cols: tuple[int, int]):
    """``x[..., rows[0]:rows[1], cols[0]:cols[1]]`` of a packed result."""
    starts = (0,) * (x.ndim - 2) + (rows[0], cols[0])
    stops = x.shape[:-2] + (rows[1], cols[1])
    return emit(x._trace, ops.slice, [x], starts=starts, stops=stops, steps=(1,) * x.ndim)


def _row(x, i: int, width: int):
    """``x[..., i, :width]``."""
    part = _part(x, (i, i + 1), (0, width))
    return reshape(part, part.shape[:-2] + (width,))


def _stacked(a, name: str):
    """``a`` lifted and converted as NumPy's, with NumPy's check that it holds matrices."""
    a = _two_dimensional(a, name)
    return convert(a, _dtype(a))


def _lower(UPLO) -> bool:
    uplo = UPLO.upper() if isinstance(UPLO, str) else UPLO
    if uplo not in ("L", "U"):
        raise numpy_error(ValueError, "UPLO argument must be 'L' or 'U'",
                          "pass UPLO='L' (the lower triangle is read) or 'U'")
    return uplo == "L"


def eigh(a, UPLO="L"):
    """np.linalg.eigh: ``EighResult(eigenvalues, eigenvectors)``, ascending, syevd's."""
    lower = _lower(UPLO)
    a = _matrices(a, "eigh")
    a = convert(a, _dtype(a))
    n = a.shape[-1]
    packed = batched(ops.eigh, a, lower=lower, vectors=True)
    return EighResult(_row(packed, n, n), _part(packed, (0, n), (0, n)))


def eigvalsh(a, UPLO="L"):
    lower = _lower(UPLO)
    a = _matrices(a, "eigvalsh")
    return batched(ops.eigh, convert(a, _dtype(a)), lower=lower, vectors=False)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """np.linalg.svd: ``SVDResult(U, S, Vh)`` by gesdd (``S`` alone without ``compute_uv``);
    ``hermitian`` as NumPy: from eigh, the eigenvalues' signs moved into ``Vh``."""
    if hermitian:
        return _hermitian_svd(a, compute_uv)
    a = _stacked(a, "svd")
    if not compute_uv:
        return batched(ops.svd, a, full_matrices=False, compute_uv=False)
    m, n = a.shape[-2:]
    full = bool(full_matrices)
    k, mu, nv = svd_sizes(m, n, full)
    packed = batched(ops.svd, a, full_matrices=full, compute_uv=True)
    return SVDResult(_part(packed, (0, m), (0, mu)), _row(packed, m, k),
                     _part(packed, (m + 1, m + 1 + nv), (0, n)))


def _hermitian_svd(a, compute_uv):
    """NumPy's steps: eigh, |eigenvalues| in descending order, their signs into ``vh``."""
    if not compute_uv:
        s = absolute(eigvalsh(a))
        return _descending(s, _argsort_last(s))
    s, u = eigh(a)
    sgn = copysign(1.0, s)
    s = absolute(s)
    idx = _argsort_last(s)
    sgn, s = _descending(sgn, idx), _descending(s, idx)
    from .gather import take_along_axis
    flipped = idx[..., ::-1]
    u = take_along_axis(u, reshape(flipped, flipped.shape[:-1] + (1,) + flipped.shape[-1:]),
                        -1)
    vh = swapaxes(u * reshape(sgn, sgn.shape[:-1] + (1,) + sgn.shape[-1:]), -1, -2)
    return SVDResult(u, s, vh)


def _argsort_last(x):
    from .sorting import argsort
    return argsort(x, axis=-1)


def _descending(x, idx):
    from .gather import take_along_axis
    return take_along_axis(x, idx[..., ::-1], -1)


def svdvals(x, /):
    return svd(x, compute_uv=False)


def qr(a, mode="reduced"):
    """np.linalg.qr: ``QRResult(Q, R)`` by geqrf and orgqr (``R`` alone for mode "r")."""
    if mode not in ("reduced", "complete", "r"):
        if mode in ("raw", "full", "f", "economic", "e"):
            raise unsupported(f"np.linalg.qr(mode={mode!r})",
                              "use mode='reduced', 'complete' or 'r'")
        raise numpy_error(ValueError, f"Unrecognized mode '{mode}'",
                          "use mode='reduced', 'complete' or 'r'")
    a = _stacked(a, "qr")
    if mode == "r":
        return batched(ops.qr, a, mode="r")
    m, n = a.shape[-2:]
    mq = qr_columns(m, n, mode)
    packed = batched(ops.qr, a, mode=mode)
    return QRResult(_part(packed, (0, m), (0, mq)), _part(packed, (0, mq), (mq, mq + n)))


def svd_norm(x, ord, row: int, col: int):
    """The matrix 2 (-2) norm, the largest (smallest) singular value, or the nuclear norm,
    their sum, of the matrices in axes ``row`` and ``col``: NumPy's ``_multi_svd_norm``."""
    s = svd(moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
    if ord == 2:
        return amax(s, -1, initial=0)
    if ord == -2:
        return amin(s, -1)
    return reduce_sum(s, -1)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """np.linalg.matrix_rank: singular values above ``max(m, n) * eps * max(S)`` by default."""
    A = lift(A)
    if A.ndim < 2:
        return convert(reduce_any(A), dtypes.int64)
    S = svd(A, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(A.shape[-2:]) * float(np.finfo(S.dtype).eps)
        else:
            rtol = _trailing_axis(rtol, A)
        tol = amax(S, -1, keepdims=True, initial=0) * rtol
    else:
        tol = _trailing_axis(tol, A)
    return count_nonzero(greater(S, tol), axis=-1)


def _trailing_axis(x, like):
    """``asarray(x)[..., newaxis]``."""
    x = x if hasattr(x, "_trace") else constant(np.asarray(x), trace=like._trace)
    return reshape(x, x.shape + (1,))


_NOVALUE = getattr(np, "_NoValue", object())


def pinv(a, rcond=None, hermitian=False, *, rtol=_NOVALUE):
    """np.linalg.pinv: ``vh.T @ (s^-1 u.T)``, singular values at most ``rcond * max(s)``
    (1e-15 by default, as NumPy's) taken as zero."""
    if rcond is None:
        if rtol is _NOVALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(lift(a).shape[-2:]) * float(np.finfo(_dtype(a).np).eps)
        else:
            rcond = rtol
    elif rtol is not _NOVALUE:
        raise numpy_error(ValueError, "`rtol` and `rcond` can't be both set.",
                          "pass one of them")
    a = lift(a)
    if a.ndim >= 2 and a.shape[-1] * a.shape[-2] == 0:
        # NumPy's early return: no singular value to take the largest of (and a's dtype)
        m, n = a.shape[-2:]
        return constant(np.zeros(a.shape[:-2] + (n, m), a.dtype), trace=a._trace)
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    cutoff = _trailing_axis(rcond, s) * amax(s, -1, keepdims=True)
    large = greater(s, cutoff)
    inverse = where(large, true_divide(np.ones((), s.dtype), s), np.zeros((), s.dtype))
    scaled = reshape(inverse, inverse.shape + (1,)) * swapaxes(u, -1, -2)
    # (the Tracer's @ is linalg.matmul, which this module cannot import: linalg's norm
    # imports this module's svd_norm)
    return swapaxes(vh, -1, -2) @ scaled


def cond(x, p=None):
    """np.linalg.cond for ``p`` None, 2 or -2: the ratio of extreme singular values (inf
    where that is 0/0, as NumPy's; a nan in ``x`` is svd's LinAlgError)."""
    if not (p is None or (not isinstance(p, str) and p in (2, -2))):
        raise unsupported(f"np.linalg.cond(p={p!r})", "use p=None, 2 or -2 (from singular "
                          "values); the other norms need an inverse that may not exist")
    x = lift(x)
    if x.size == 0 and x.ndim >= 2 and x.shape[-1] * x.shape[-2] == 0:
        raise numpy_error(_LinAlgError, "cond is not defined on empty arrays",
                          "pass a non-empty matrix")
    s = svd(x, compute_uv=False)
    first, last = s[..., 0], s[..., -1]
    r = true_divide(last, first) if p == -2 else true_divide(first, last)
    from .math_functions import isnan
    return where(isnan(r), np.asarray(np.inf, r.dtype), r)
