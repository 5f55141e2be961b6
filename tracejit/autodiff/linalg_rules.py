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

The decompositions' rules are JAX's, on their packed results (ir/linalg_ops.py), for float
matrices; where the rule needs outputs the op did not compute (the eigenvectors of eigvalsh,
u and vh of svdvals, q of qr's mode "r") it emits the op that computes them. ``eigh``: the
tangent of ``a`` taken symmetric, as cholesky's (JAX symmetrizes its input), ``dw =
diag(v.T da v)``, ``dv = v (F * (v.T da v))`` with ``F_ij = 1 / (w_j - w_i)`` off the
diagonal (inf or nan at repeated eigenvalues, as JAX's). ``svd``: JAX's svd_jvp_rule with
``F_ij = 1 / (s_j^2 - s_i^2)`` and its terms for the columns outside u's or v's span when
``m != n``; the vjp its transpose. ``full_matrices=True`` of a non-square matrix has no rule
(the extra columns of u or rows of vh are not unique; JAX refuses it too). ``qr``: JAX's
qr_jvp_rule, for ``m >= n`` (mode "complete": ``m == n``), and its transpose; the other
shapes are refused, as JAX does. Eigenvectors and singular vectors are unique up to sign, so
only functions invariant to those signs have derivatives that mean anything. In the vjps, a
zero cotangent of the vectors adds nothing (JAX's symbolic zeros skip it), where ``F``'s inf
(or ``1 / s`` at a zero singular value) times it would be nan: so ``w, v = eigh(a)`` with
only ``w`` used has JAX's finite gradient at repeated eigenvalues (``np.eye``), and likewise
``s`` of svd.
"""
from __future__ import annotations

import numpy as np

from ..ir import ops
from ..ir.linalg_ops import qr_columns
from ..tracer.errors import unsupported
from ..tracer.numpy.arithmetic import equal, greater, where
from ..tracer.numpy.lifting import reshape
from ..tracer.numpy.linalg_decompositions import _part, _row
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


# -- decompositions: eigh, svd, qr ------------------------------------------------------------

def _mm(a, b):
    return op(ops.matmul, a, b)


def _identity(like, k: int):
    """The ``k * k`` identity in ``like``'s batch and dtype."""
    batch = like.shape[:-2]
    eye = op(ops.constant, value=np.eye(k, dtype=like.dtype))
    return op(ops.broadcast_in_dim, eye, shape=batch + (k, k),
              dims=(len(batch), len(batch) + 1))


def _diagonal(x):
    """``x[..., i, i]``."""
    return sum_axes(x * _identity(x, x.shape[-1]), [x.ndim - 1])


def _as_row(v):
    """``v[..., None, :]``."""
    return reshape(v, v.shape[:-1] + (1, v.shape[-1]))


def _as_column(v):
    return reshape(v, v.shape + (1,))


def _inverse_gaps(w):
    """``F_ij = 1 / (w_j - w_i)`` off the diagonal, 0 on it (JAX's form, for any ``w``)."""
    eye = _identity(_as_row(w) * _as_column(w), w.shape[-1])
    return 1.0 / (eye + _as_row(w) - _as_column(w)) - eye


def _unless_zero(x, product):
    """``product`` (of ``x`` and inf or nan factors) where ``x != 0``, else 0: a vjp's vector
    cotangent that is zero (only the values were used) contributes nothing, as under JAX's
    symbolic zeros, instead of ``0 * inf = nan`` at repeated (or zero) values."""
    return where(equal(x, np.zeros((), x.dtype)), np.zeros((), x.dtype), product)


def _widen(x, width: int):
    """``x`` with zero columns appended up to ``width`` (to pack it)."""
    if x.shape[-1] == width:
        return x
    zero = op(ops.constant, value=np.zeros((), x.dtype))
    return op(ops.pad, x, zero, low=(0,) * x.ndim,
              high=(0,) * (x.ndim - 1) + (width - x.shape[-1],), interior=(0,) * x.ndim)


def _stack_rows(parts, width: int):
    return op(ops.concatenate, *[_widen(p, width) for p in parts], axis=parts[0].ndim - 2)


def _eigh_parts(a, out, lower, vectors):
    """(v, w) of ``a``: from ``out``, or from an eigh that computes the vectors."""
    n = a.shape[-1]
    packed = out if vectors else op(ops.eigh, a, lower=lower, vectors=True)
    return _part(packed, (0, n), (0, n)), _row(packed, n, n)


@jvp_rule(ops.eigh)
def _(ts, a, out, lower, vectors):
    (ta,) = ts
    v, w = _eigh_parts(a, out, lower, vectors)
    inner = _mm(_mm(swap_last(v), (ta + swap_last(ta)) * 0.5), v)       # v.T sym(da) v
    dw = _diagonal(inner)
    if not vectors:
        return dw
    dv = _mm(v, _inverse_gaps(w) * inner)
    return _stack_rows([dv, _as_row(dw)], a.shape[-1])


@vjp_rule(ops.eigh)
def _(ct, a, out, lower, vectors):
    n = a.shape[-1]
    v, w = _eigh_parts(a, out, lower, vectors)
    gw = _row(ct, n, n) if vectors else ct
    inner = _as_row(gw) * _identity(a, n)
    if vectors:
        vt_gv = _mm(swap_last(v), _part(ct, (0, n), (0, n)))
        inner = inner + _unless_zero(vt_gv, _inverse_gaps(w) * vt_gv)
    ga = _mm(_mm(v, inner), swap_last(v))
    return [(ga + swap_last(ga)) * 0.5]


def _svd_parts(a, out, full_matrices, compute_uv):
    """(u, s, vh) of the thin svd of ``a``: from ``out``, or from an svd that computes them.
    Refuses full matrices of a non-square ``a``, whose extra vectors have no derivative."""
    m, n = a.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise unsupported("the derivative of np.linalg.svd(full_matrices=True) of non-square "
                          f"matrices ({m}x{n})", "pass full_matrices=False: the columns of u "
                          "(rows of vh) beyond min(m, n) are not unique, so they have no "
                          "derivative (JAX refuses them too)")
    packed = out if compute_uv else op(ops.svd, a, full_matrices=False, compute_uv=True)
    k = min(m, n)
    return (_part(packed, (0, m), (0, k)), _row(packed, m, k),
            _part(packed, (m + 1, m + 1 + k), (0, n)))


def _squared_gaps(s):
    """``F_ij = 1 / (s_j^2 - s_i^2)`` off the diagonal, 0 on it (JAX's svd_jvp_rule)."""
    row, col = _as_row(s), _as_column(s)
    diffs = (row + col) * (row - col)
    eye = _identity(diffs, s.shape[-1])
    return 1.0 / (diffs + eye) - eye


@jvp_rule(ops.svd)
def _(ts, a, out, full_matrices, compute_uv):
    (ta,) = ts
    m, n = a.shape[-2:]
    u, s, vh = _svd_parts(a, out, full_matrices, compute_uv)
    v = swap_last(vh)
    ds_mat = _mm(_mm(swap_last(u), ta), v)
    ds = _diagonal(ds_mat)
    if not compute_uv:
        return ds
    f = _squared_gaps(s)
    row, col = _as_row(s), _as_column(s)
    dss, sds = row * ds_mat, col * ds_mat
    du = _mm(u, f * (dss + swap_last(dss)))
    dv = _mm(v, f * (sds + swap_last(sds)))
    if m > n:
        dav = _mm(ta, v)
        du = du + (dav - _mm(u, _mm(swap_last(u), dav))) / row
    if n > m:
        dahu = _mm(swap_last(ta), u)
        dv = dv + (dahu - _mm(v, _mm(vh, dahu))) / row
    return _stack_rows([du, _as_row(ds), swap_last(dv)], out.shape[-1])


@vjp_rule(ops.svd)
def _(ct, a, out, full_matrices, compute_uv):
    m, n = a.shape[-2:]
    k = min(m, n)
    u, s, vh = _svd_parts(a, out, full_matrices, compute_uv)
    if not compute_uv:
        return [_mm(u * _as_row(ct), vh)]                       # u diag(gs) vh
    gu, gs = _part(ct, (0, m), (0, k)), _row(ct, m, k)
    gv = swap_last(_part(ct, (m + 1, m + 1 + k), (0, n)))
    v = swap_last(vh)
    f = _squared_gaps(s)
    row, col = _as_row(s), _as_column(s)
    ut_gu, vt_gv = _mm(swap_last(u), gu), _mm(swap_last(v), gv)
    j, kk = _unless_zero(ut_gu, f * ut_gu), _unless_zero(vt_gv, f * vt_gv)
    inner = _as_row(gs) * _identity(a, k) + (j + swap_last(j)) * row + col * (kk + swap_last(kk))
    ga = _mm(_mm(u, inner), vh)
    if m > n:
        outside = gu - _mm(u, ut_gu)                     # 0/0 at a zero s if gu is 0
        ga = ga + _mm(_unless_zero(outside, outside / row), vh)
    if n > m:
        gvt = swap_last(gv)
        outside = gvt - _mm(_mm(gvt, v), vh)
        ga = ga + _mm(u, _unless_zero(outside, outside / col))
    return [ga]


def _qr_parts(a, out, mode):
    """(q, r) of the thin qr of ``a`` (``m >= n``), from ``out`` or from a qr that computes q;
    refuses the shapes JAX's rule does."""
    m, n = a.shape[-2:]
    if m < n or (mode == "complete" and m != n):
        raise unsupported(f"the derivative of np.linalg.qr(mode={mode!r}) of {m}x{n} matrices",
                          "it is defined for m >= n (mode 'reduced' or 'r'; 'complete' for "
                          "square matrices), as JAX's")
    packed = op(ops.qr, a, mode="reduced") if mode == "r" else out
    return _part(packed, (0, m), (0, n)), _part(packed, (0, n), (n, 2 * n))


def _pack_qr(dq, dr, a, mode):
    if mode == "r":
        return dr
    m, n = a.shape[-2:]
    rows = m - qr_columns(m, n, mode)
    if rows:
        zero = op(ops.constant, value=np.zeros((), dr.dtype))
        dr = op(ops.pad, dr, zero, low=(0,) * dr.ndim,
                high=(0,) * (dr.ndim - 2) + (rows, 0), interior=(0,) * dr.ndim)
    return op(ops.concatenate, dq, dr, axis=a.ndim - 1)


@jvp_rule(ops.qr)
def _(ts, a, out, mode):
    (ta,) = ts
    q, r = _qr_parts(a, out, mode)
    dx_rinv = swap_last(_lower_solve(swap_last(r), swap_last(ta)))      # da r^-1
    qt_dx_rinv = _mm(swap_last(q), dx_rinv)
    low = _tril(qt_dx_rinv, -1)
    do = low - swap_last(low)                                           # skew-symmetric
    dq = _mm(q, do - qt_dx_rinv) + dx_rinv
    dr = _mm(qt_dx_rinv - do, r)
    return _pack_qr(dq, dr, a, mode)


@vjp_rule(ops.qr)
def _(ct, a, out, mode):
    m, n = a.shape[-2:]
    q, r = _qr_parts(a, out, mode)
    if mode == "r":
        gq, gr = None, ct
    else:
        gq, gr = _part(ct, (0, m), (0, n)), _part(ct, (0, n), (n, 2 * n))
    mid = -_mm(gr, swap_last(r))
    if gq is not None:
        mid = mid + _mm(swap_last(q), gq)
    gc = _tril(mid - swap_last(mid), -1) - mid
    gb = _mm(q, gc) if gq is None else gq + _mm(q, gc)
    return [swap_last(_upper_solve(r, swap_last(gb)))]                  # gb r^-T
