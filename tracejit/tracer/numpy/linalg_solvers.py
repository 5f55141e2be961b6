"""np.linalg's solvers and factorizations on Tracers: solve, inv, cholesky, slogdet, det.

Each is one LAPACK-backed IR op (ir/linalg_ops.py) between NumPy's argument rules: the dtype
(float32 only if every operand is float32, else float64, as NumPy's ``_commonType``), the
batch dims (``solve`` broadcasts them like matmul), the vector right-hand side of ``solve``
(NumPy 2: ``b`` of one dim; NumPy 1: ``b.ndim == a.ndim - 1``) and NumPy's errors at the
user's line. ``inv`` is ``solve(a, eye)`` and ``det`` is ``sign * exp(logabsdet)`` of
``slogdet``: that is how NumPy computes them too, so they need no op of their own.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error
from .arithmetic import multiply
from .lifting import broadcast_to, constant, convert, emit, lift, lift_all, reshape
from .math_functions import exp
from .rules import abstract, broadcast_shapes
from .shapes import swapaxes

_NUMPY2 = int(np.__version__.split(".")[0]) >= 2
_LinAlgError = np.linalg.LinAlgError
SlogdetResult = type(np.linalg.slogdet(np.eye(1)))   # NumPy's namedtuple (a tuple before 1.25)


def _dtype(*xs):
    found = [abstract(x)[0] for x in xs]
    for d in found:
        if d.is_float and d.bits < 32:
            raise numpy_error(TypeError, f"array type {d.name} is unsupported in linalg",
                              "convert it with .astype(np.float32) first")
    return dtypes.float32 if all(d == dtypes.float32 for d in found) else dtypes.float64


def _two_dimensional(a, name: str):
    """``a`` lifted, with NumPy's check that it holds matrices (its last two dims)."""
    a = lift(a)
    if a.ndim < 2:
        raise numpy_error(_LinAlgError, f"{a.ndim}-dimensional array given. Array must be at "
                          f"least two-dimensional (np.linalg.{name})",
                          "pass matrices: the last two dims are each matrix's")
    return a


def _matrices(a, name: str):
    """``a`` lifted, with NumPy's checks that it holds square matrices."""
    a = _two_dimensional(a, name)
    if a.shape[-1] != a.shape[-2]:
        raise numpy_error(_LinAlgError, f"Last 2 dimensions of the array must be square (shape "
                          f"{a.shape}, np.linalg.{name})", "pass square matrices")
    return a


def solve(a, b):
    """np.linalg.solve: ``x`` with ``a @ x == b``; ``b`` a vector or a batch of matrices."""
    a, b = lift_all(a, b)
    target = _dtype(a, b)
    a = convert(_matrices(a, "solve"), target)
    b = convert(b, target)
    vector = b.ndim == 1 if _NUMPY2 else b.ndim == a.ndim - 1
    n = a.shape[-1]
    name, core = ("solve1", "(m,m),(m)->(m)") if vector else ("solve", "(m,m),(m,n)->(m,n)")
    if b.ndim < (1 if vector else 2):
        raise numpy_error(ValueError, f"{name}: Input operand 1 does not have enough "
                          f"dimensions (has {b.ndim}, gufunc core with signature {core} "
                          "requires 2)", "pass a vector or a matrix as b")
    size = b.shape[-1] if vector else b.shape[-2]
    if size != n:
        raise numpy_error(ValueError, f"{name}: Input operand 1 has a mismatch in its core "
                          f"dimension 0, with gufunc signature {core} (size {size} is "
                          f"different from {n})",
                          "b's length (its second-to-last dim for matrices) must equal a's n")
    if vector:
        b = reshape(b, b.shape + (1,))
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    x = batched(ops.solve, a, b)
    return reshape(x, x.shape[:-1]) if vector else x


def batched(opdef, *xs, **attrs):
    """``opdef`` on operands of one batch shape, viewed as one batch dim: ``[q, n, k]``. Every
    linear algebra op in the IR has rank 3, so each compiles one kernel per dtype (a reshape
    that adds or merges leading dims is a free view)."""
    batch = xs[0].shape[:-2]
    q = math.prod(batch)
    out = emit(xs[0]._trace, opdef, [reshape(x, (q,) + x.shape[-2:]) for x in xs], **attrs)
    return reshape(out, batch + out.shape[1:])


def inv(a):
    """np.linalg.inv: LAPACK's gesv with the identity as right-hand side, as NumPy does."""
    a = _matrices(a, "inv")
    a = convert(a, _dtype(a))
    eye = constant(np.eye(a.shape[-1], dtype=a.dtype), trace=a._trace)
    return batched(ops.solve, a, broadcast_to(eye, a.shape))


def cholesky(a, /, *, upper=False):
    """np.linalg.cholesky: reads the lower triangle (the upper one with ``upper=True``, as the
    transpose of the factor of the transposed matrix)."""
    a = _matrices(a, "cholesky")
    a = convert(a, _dtype(a))
    if upper:
        return swapaxes(batched(ops.cholesky, swapaxes(a, -1, -2)), -1, -2)
    return batched(ops.cholesky, a)


def slogdet(a):
    """np.linalg.slogdet: ``SlogdetResult(sign, logabsdet)``, both of the matrices' dtype."""
    a = _matrices(a, "slogdet")
    a = convert(a, _dtype(a))
    both = batched(ops.slogdet, a)
    sign, logabsdet = (_last(both, i) for i in (0, 1))
    return SlogdetResult(sign, logabsdet)


def det(a):
    sign, logabsdet = slogdet(a)
    return multiply(sign, exp(logabsdet))


def _last(x, i: int):
    """``x[..., i]`` of a traced array."""
    starts = (0,) * (x.ndim - 1) + (i,)
    stops = x.shape[:-1] + (i + 1,)
    part = emit(x._trace, ops.slice, [x], starts=starts, stops=stops, steps=(1,) * x.ndim)
    return reshape(part, x.shape[:-1])
