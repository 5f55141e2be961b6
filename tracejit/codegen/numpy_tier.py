"""The first tier: an optimized Function run op by op on NumPy, while its kernels compile.

Unlike the reference interpreter (which checks every value and copies every layout op, to
define the semantics plainly), this executor is built once per program for speed: each op is a
prepared call on slots of a list, layout ops are NumPy views (a broadcast is
``np.broadcast_to``, no copy), matmuls go to NumPy's BLAS, and each intermediate is dropped at
its last use. Its results agree with the interpreter's up to NumPy's own rounding (pairwise
sums, float32 transcendentals), the tolerance the compiled kernels are held to as well.
Control ops run their regions' own NumpyPrograms (optimized once, when the program is built):
the chosen branch of a ``cond``, a Python loop over a ``while_loop``'s or ``scan``'s bodies.
Small matmuls run on one thread of NumPy's BLAS (blas_threads.SMALL_MATMUL). ``op_runs``
counts the ops one call runs, a loop's body once per step (driver/tiered.py decides by it).
"""
from __future__ import annotations

import math

import sys

import numpy as np

from ..ir import Function, dtypes, ops
from ..ir.control_ops import scan_parts
from ..ir.passes import optimize
from ..ir.registry import rule_table
from . import blas_threads
from .errors import index_out_of_bounds

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


@view(ops.window)
def _(x, dims, sizes):
    if not dims:
        return x
    return np.lib.stride_tricks.sliding_window_view(x, tuple(sizes), axis=tuple(dims))


def _update_slice_in_place(x, v, starts, steps):
    x[ops.update_box(starts, steps, v.shape)] = v
    return x


# Ops that may write their result into their first operand's array when it dies with them:
# a loop's x[i] = v then costs the box, not a copy of x (plan.py does the same when compiled).
IN_PLACE = {ops.update_slice: _update_slice_in_place}


class NumpyProgram:
    """``program(leaves) -> list of arrays`` on NumPy, for a Function without call ops."""

    def __init__(self, fn: Function, region: bool = False):
        """``region``: the body of a control op, whose results may share memory with its
        arguments (nothing on this tier writes into an array it did not make)."""
        self.function = fn
        self.region = region
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
        # ops run by one call, a loop's body once per step: what the tier costs in Python
        # dispatch (tiered.py decides by it whether the compile is worth waiting for)
        self.op_runs = 0
        for i, op in enumerate(fn.ops):
            impl = VIEWS.get(op.opdef, op.opdef.impl)
            ufunc = op.opdef.meta.get("numpy")
            if (op.opdef.category == "elementwise" and isinstance(ufunc, np.ufunc)
                    and dtypes.bfloat16 not in {v.type.dtype for v in op.operands}):
                impl = ufunc        # the impl's errstate and dtype are the loop's below
                # (bfloat16 takes the impl: ml_dtypes' own ufuncs are not quite float32's)
            self.op_runs += 1
            if op.opdef in CONTROL:
                regions = [NumpyProgram(optimize(r), region=True) for r in op.regions]
                impl = CONTROL[op.opdef](regions)
                self.op_runs += _op_runs(op, regions)
            if op.opdef is ops.take:
                impl = _checked_take(op.loc)
            if op.opdef is ops.matmul:
                impl = _matmul(op)
            dead = [slot[v] for v in dict.fromkeys(op.operands)
                    if last_use[v] == i and v not in keep and v.op is not None]
            x = op.operands[0] if op.operands else None
            # (not when x is also a later operand, update_slice(x, x): its slot is emptied
            # when x is taken out for the in-place write)
            donor = (IN_PLACE.get(op.opdef) if x is not None and slot[x] in dead
                     and x not in op.operands[1:] else None)
            self.steps.append((impl, [slot[v] for v in op.operands],
                               [(slot[r], r.type.dtype.np) for r in op.results],
                               op.attrs, dead, donor))
        self.n_slots = len(slot)
        self.params = [(slot[p], p.type.dtype.np) for p in fn.params]
        self.results = [slot[r] for r in fn.results]

    def __call__(self, leaves):
        env = [None] * self.n_slots
        for (i, dt), x in zip(self.params, leaves):
            env[i] = np.asarray(x, dt)
        with np.errstate(all="ignore"):       # IEEE values, as the compiled kernels give
            for impl, ins, outs, attrs, dead, donor in self.steps:
                if donor is not None:
                    # the first operand dies here: write into its array if nothing else holds
                    # it (no view of it, no other value, not an argument)
                    x, env[ins[0]] = env[ins[0]], None
                    if sys.getrefcount(x) == 2 and x.flags.owndata and x.flags.writeable:
                        out = donor(x, *[env[i] for i in ins[1:]], **attrs)
                    else:
                        out = impl(x, *[env[i] for i in ins[1:]], **attrs)
                    del x
                else:
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
        if self.region:
            return [env[i] for i in self.results]
        args = [env[i] for i, _ in self.params]
        results = []
        for i in self.results:
            r = env[i]
            # Results are fresh arrays: never a view of an argument or of another result. And
            # C-contiguous, as the compiled tiers': a plan's small groups run here
            # (plan._numpy_group) and hand their results to kernels, which take C layouts
            # only (the native hand-off passes a pointer and the shape, no strides), and a
            # ufunc keeps its operand's order (np.exp(x.T) is F-ordered).
            if not r.flags.owndata or not r.flags.c_contiguous or any(
                    r is a for a in args) or any(np.may_share_memory(r, o) for o in results):
                r = r.copy()
            results.append(r)
        return results


def _matmul(op):
    """np.matmul itself where no operand is 16-bit (the op's impl widens those, at ~2 us of
    Python a call, 600 calls in the RNN step's scans), on one BLAS thread where it is small
    (blas_threads.SMALL_MATMUL)."""
    a, b = (v.type for v in op.operands)
    impl = (op.opdef.impl if {a.dtype, b.dtype} & {dtypes.bfloat16, dtypes.float16}
            else np.matmul)
    k = a.shape[-1] if a.shape else 1
    if math.prod(op.results[0].type.shape) * k > blas_threads.SMALL_MATMUL:
        return impl
    sections, settle = blas_threads.SMALL_SECTIONS, blas_threads.settle

    def small(x, y):
        # (counted in and out by one C call each, inside the try and first in the finally: a
        # KeyboardInterrupt cannot land between a count and its undoing; blas_threads)
        try:
            sections.append(None)
            settle()
            return impl(x, y)
        finally:
            sections.pop()
            settle()
    return small


# A while loop's steps are not known before it runs: counted as this many.
WHILE_STEPS = 10


def _op_runs(op, regions) -> int:
    """The ops the regions of control op ``op`` run in one call (beyond the op itself)."""
    runs = [r.op_runs for r in regions]
    if op.opdef is ops.scan:
        return op.attrs["length"] * runs[0]
    if op.opdef is ops.while_loop:
        return WHILE_STEPS * sum(runs)
    return max(runs, default=0)          # cond: one branch


def _checked_take(loc):
    """np.take raising what the compiled kernel raises (NumPy's message would name the axis of
    a flattened array that take_along_axis and fancy indexing gather from)."""
    def take(x, idx, axis):
        n = x.shape[axis]
        # as np.take: no index is checked where the axes before ``axis`` hold nothing
        if idx.size and math.prod(x.shape[:axis]) and (idx.min() < -n or idx.max() >= n):
            raise IndexError(index_out_of_bounds(loc))
        return np.take(x, idx, axis=axis)
    return take


# -- control ops: ``impl(*operands, **attrs)`` closed over their regions' programs -------------

def _cond(branches):
    def run(index, *operands):
        return branches[int(np.clip(int(index), 0, len(branches) - 1))](operands)
    return run


def _while_loop(regions):
    cond_fn, body_fn = regions

    def run(*operands, consts):
        fixed, carries = list(operands[:consts]), list(operands[consts:])
        while bool(cond_fn(fixed + carries)[0]):
            carries = body_fn(fixed + carries)
        return [np.array(c) for c in carries]       # never an operand itself
    return run


def _scan(regions):
    (body,) = regions
    ys_types = [(tuple(r.type.shape), r.type.dtype.np)
                for r in body.function.results]

    def run(*operands, consts, carries, length, reverse):
        fixed, carry, xs = scan_parts(operands, consts, carries)
        ys = [np.empty((length,) + shape, dt) for shape, dt in ys_types[carries:]]
        for i in (range(length - 1, -1, -1) if reverse else range(length)):
            out = body(fixed + carry + [x[i] for x in xs])
            carry = out[:carries]
            for y, o in zip(ys, out[carries:]):
                y[i] = o
        return [np.array(c) for c in carry] + ys
    return run


CONTROL = {ops.cond: _cond, ops.while_loop: _while_loop, ops.scan: _scan}
