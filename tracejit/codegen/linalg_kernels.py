"""Kernels of the linear algebra ops (solve, triangular_solve, cholesky, slogdet, eigh, svd,
qr): ``kernel``
rules, like the templates' (templates.py), each a call of a LAPACK helper of lapack.py on the
operands viewed as batches of matrices.

Not a kind of their own, as matmul is: a matmul group fuses an elementwise epilogue into its
pass over the product, where a factorization has no such pass to share; so each op is an
``op`` group of one kernel, serial (LAPACK's error path takes the GIL, and a batch of small
matrices is a short loop). The sizes are parameters, so a kernel compiles once per rank and
dtype, whatever the matrices' sizes.
"""
from __future__ import annotations

import math

from ..ir import ops
from . import emitters
from .source import HEADER, KernelSpec, function_source

_IMPORT = "from tracejit.codegen import lapack\n"


def _spec(op, body: list[str], sizes: list[int], nin: int) -> KernelSpec:
    params = [f"a{i}" for i in range(nin)] + ["o0"] + [f"s{i}" for i in range(len(sizes))]
    source = function_source(params, body).replace(HEADER, HEADER + _IMPORT, 1)
    n = op.operands[0].shape[-1]
    work = math.prod(op.operands[0].shape[:-2]) * n * n * max(n, 1)
    return KernelSpec(source, list(op.operands), list(op.results), [], sizes, False, work)


def _batch(v) -> int:
    return math.prod(v.shape[:-2])


@emitters.register("kernel", ops.solve, ops.triangular_solve)
def _(op, group):
    a, b = op.operands
    sizes = [_batch(a), a.shape[-1], b.shape[-1]]
    body = ["A = a0.reshape((s0, s1, s1))", "B = a1.reshape((s0, s1, s2))",
            "X = o0.reshape((s0, s1, s2))"]
    if op.opdef is ops.solve:
        body.append("lapack.solve(A, B, X)")
    else:
        body.append(f"lapack.triangular_solve(A, B, X, {bool(op.attrs['lower'])})")
    return _spec(op, body, sizes, 2)


@emitters.register("kernel", ops.cholesky, ops.slogdet)
def _(op, group):
    (a,) = op.operands
    sizes = [_batch(a), a.shape[-1]]
    if op.opdef is ops.cholesky:
        body = ["lapack.cholesky(a0.reshape((s0, s1, s1)), o0.reshape((s0, s1, s1)))"]
    else:
        body = ["lapack.slogdet(a0.reshape((s0, s1, s1)), o0.reshape((s0, 2)))"]
    return _spec(op, body, sizes, 1)


@emitters.register("kernel", ops.eigh, ops.svd, ops.qr)
def _(op, group):
    """A decomposition, its packed result viewed as ``[q, rows, cols]`` (a result of one row,
    the values alone, as ``[q, 1, k]``)."""
    (a,) = op.operands
    out = op.results[0].shape
    rows, cols = out[-2:] if len(out) == len(a.shape) else (1, out[-1])
    sizes = [_batch(a), a.shape[-2], a.shape[-1], rows, cols]
    attrs = op.attrs
    if op.opdef is ops.eigh:
        call = f"lapack.eigh(A, O, {attrs['lower']}, {attrs['vectors']})"
    elif op.opdef is ops.svd:
        call = f"lapack.svd(A, O, {attrs['full_matrices']}, {attrs['compute_uv']})"
    else:
        call = f"lapack.qr(A, O, {attrs['mode'] == 'complete'}, {attrs['mode'] == 'r'})"
    body = ["A = a0.reshape((s0, s1, s2))", "O = o0.reshape((s0, s3, s4))", call]
    return _spec(op, body, sizes, 1)
