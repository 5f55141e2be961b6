"""The first tier: an optimized Function run op by op on NumPy, while its kernels compile.

Unlike the reference interpreter (which checks every value and copies every layout op, to
define the semantics plainly), this executor is built once per program for speed: each op is a
prepared call on slots of a list, layout ops are NumPy views (a broadcast is
``np.broadcast_to``, no copy), matmuls go to NumPy's BLAS, and each intermediate is dropped at
its last use. Its results agree with the interpreter's up to NumPy's own rounding (pairwise
sums, float32 transcendentals), the tolerance the compiled kernels are held to as well.
"""
from __future__ import annotations

import numpy as np

from ..ir import Function, ops
from ..ir.registry import rule_table

# Layout ops as views: the reference impls copy, so that no value shares memory there.
VIEWS, view = rule_table()


@view(ops.broadcast_in_dim)
def _(x, shape, dims):
    shaped = [1] * len(shape)
    for i, d in enumerate(dims):
        shaped[d] = x.shape[i]
    return np.broadcast_to(x.reshape(shaped), shape)


@view(ops.reshape)
def _(x, shape):
    return x.reshape(shape)


@view(ops.transpose)
def _(x, perm):
    return np.transpose(x, perm)


class NumpyProgram:
    """``program(leaves) -> list of arrays`` on NumPy, for a Function without call ops."""

    def __init__(self, fn: Function):
        self.function = fn
        slot = {v: i for i, v in enumerate(fn.params)}
        for op in fn.ops:
            for r in op.results:
                slot[r] = len(slot)
        last_use: dict = {}
        for i, op in enumerate(fn.ops):
            for v in op.operands:
                last_use[v] = i
        keep = set(fn.results)
        self.steps = []
        for i, op in enumerate(fn.ops):
            impl = VIEWS.get(op.opdef, op.opdef.impl)
            dead = [slot[v] for v in dict.fromkeys(op.operands)
                    if last_use[v] == i and v not in keep and v.op is not None]
            self.steps.append((impl, [slot[v] for v in op.operands],
                               [(slot[r], r.type.dtype.np) for r in op.results],
                               op.attrs, dead))
        self.n_slots = len(slot)
        self.params = [(slot[p], p.type.dtype.np) for p in fn.params]
        self.results = [slot[r] for r in fn.results]

    def __call__(self, leaves):
        env = [None] * self.n_slots
        for (i, dt), x in zip(self.params, leaves):
            env[i] = np.asarray(x, dt)
        with np.errstate(all="ignore"):       # IEEE values, as the compiled kernels give
            for impl, ins, outs, attrs, dead in self.steps:
                out = impl(*[env[i] for i in ins], **attrs)
                if type(out) is not list:       # one result (multi-result ops give lists)
                    (i, dt), = outs
                    env[i] = out if type(out) is np.ndarray and out.dtype == dt else (
                        np.asarray(out).astype(dt, copy=False))
                else:
                    for (i, dt), o in zip(outs, out):
                        env[i] = np.asarray(o).astype(dt, copy=False)
                for i in dead:
                    env[i] = None
        args = [env[i] for i, _ in self.params]
        results = []
        for i in self.results:
            r = env[i]
            # Results are fresh arrays: never a view of an argument or of another result.
            if not r.flags.owndata or any(r is a for a in args) or any(
                    np.may_share_memory(r, o) for o in results):
                r = r.copy()
            results.append(r)
        return results
