"""Kernel sources for ops with their own loop structure (not fused): take, scatter_add, scatter and
cumsum, cumprod (pad and concatenate only move data, and NumPy sorts faster than a kernel: NumPy
does them, movement.py). Like fused kernels
they take every size as a parameter, so they are shape-generic. Their parameters: input arrays
``a*``, the output ``o0``, sizes ``s*``. Each is the op's ``kernel`` rule in emitters.RULES."""
from __future__ import annotations

import numpy as np

from ..ir import ops
from . import emitters
from .errors import index_out_of_bounds
from .representation import lit, load, rounded, scalar_type, store
from .source import KernelSpec, function_source


def template(*opdefs):
    return emitters.register("kernel", *opdefs)


class _Sizes:
    def __init__(self):
        self.values: list[int] = []

    def __call__(self, n: int) -> str:
        self.values.append(int(n))
        return f"s{len(self.values) - 1}"


def _sub(idx) -> str:
    idx = list(idx)
    return ", ".join(idx) + ("," if len(idx) == 1 else "") if idx else "()"


def _nest(names, bounds, body, indent="") -> list[str]:
    lines, pad = [], indent
    for n, b in zip(names, bounds):
        lines.append(f"{pad}for {n} in range({b}):")
        pad += "    "
    return lines + [pad + b for b in body]


def _finish(op, group, params_in, sizes, body, nout=1):
    """One call, serial (``lo, hi`` unused): scatter_add's writes may collide."""
    params = params_in + [f"o{i}" for i in range(nout)] + [f"s{i}" for i in
                                                            range(len(sizes.values))]
    work = int(np.prod(op.result.shape)) if op.results else 0
    return KernelSpec(function_source(params, body), list(op.operands), list(op.results), [],
                      sizes.values, False, work)


def _copy_in(sizes, src_shape, out_index, src="a0", dst="o0", op="="):
    names = [f"j{d}" for d in range(len(src_shape))]
    bounds = [sizes(n) for n in src_shape]
    return _nest(names, bounds, [f"{dst}[{_sub(out_index(names))}] {op} {src}[{_sub(names)}]"])


def _gather_index(s, x, idx_rank, axis, op):
    n = s(x.shape[axis])
    js = [f"j{axis + d}" for d in range(idx_rank)]
    # The message names the user's line (so the source, and the cached kernel, differ per
    # line for this one kind of kernel): the traced indices are only known here.
    msg = index_out_of_bounds(op.loc)
    # unsigned indices as intp, like NumPy's (a uint64 2**64 - 1 is -1): no uint64 + int64
    load = "np.int64({})" if op.operands[1].dtype.is_unsigned else "{}"
    return n, [f"t = {load.format(f'a1[{_sub(js)}]')}", "if t < 0:", f"    t += {n}",
               f"if t < 0 or t >= {n}:", f"    raise IndexError({msg!r})"]


@template(ops.take)
def _(op, group):
    x, idx = op.operands
    axis, r = op.attrs["axis"], idx.type.ndim
    s = _Sizes()
    out = op.result.shape
    names = [f"j{d}" for d in range(len(out))]
    _, check = _gather_index(s, x, r, axis, op)
    src = names[:axis] + ["t"] + names[axis + r:]
    bounds, k = [s(n) for n in out], axis + r
    # the index is read and checked once per index position, not once per element: the
    # loops after it copy a row that LLVM vectorizes (np.repeat(x, 2, axis=0) of 867 x 578
    # float32: 0.75 -> 0.3 ms)
    inner = _nest(names[k:], bounds[k:], [f"o0[{_sub(names)}] = a0[{_sub(src)}]"])
    body = _nest(names[:k], bounds[:k], check + inner)
    return _finish(op, group, ["a0", "a1"], s, body)


def _scatter_kernel(op, group, write):
    """x copied, then the slices of the updates written at idx in order, serially (writes may
    collide): ``write(dst, src)`` is the statement for one element."""
    x, idx, upd = op.operands
    axis, r = op.attrs["axis"], idx.type.ndim
    s = _Sizes()
    body = _copy_in(s, x.shape, lambda js: js)
    names = [f"j{d}" for d in range(upd.type.ndim)]
    _, check = _gather_index(s, x, r, axis, op)
    dst = f"o0[{_sub(names[:axis] + ['t'] + names[axis + r:])}]"
    body += _nest(names, [s(n) for n in upd.shape], check + [write(dst, f"a2[{_sub(names)}]")])
    return _finish(op, group, ["a0", "a1", "a2"], s, body)


@template(ops.scatter_add)
def _(op, group):
    t = op.operands[0].dtype
    if t.is_bool:
        return _scatter_kernel(op, group, lambda dst, src: f"{dst} = {dst} or {src}")
    # float16: each add in float32, rounded, as np.add.at does
    return _scatter_kernel(op, group, lambda dst, src: f"{dst} = " + store(
        t, rounded(t, f"{load(t, dst)} + {load(t, src)}")))


@template(ops.scatter)
def _(op, group):
    """A repeated index keeps its last write, as NumPy's assignment does."""
    return _scatter_kernel(op, group, lambda dst, src: f"{dst} = {src}")


@template(ops.cumsum, ops.cumprod)
def _(op, group):
    """A serial running sum (product) along the axis for each index of the other dims, in the
    result dtype (float32 in float32, ints wrapping) in order, like np.add.accumulate
    (np.multiply.accumulate)."""
    x = op.operands[0]
    axis, t = op.attrs["axis"], op.result.dtype
    s = _Sizes()
    names = [f"j{d}" for d in range(x.type.ndim)]
    outer = [d for d in range(x.type.ndim) if d != axis]
    n = s(x.shape[axis])
    first = [("0" if d == axis else names[d]) for d in range(x.type.ndim)]
    step = f"acc {'*' if op.opdef is ops.cumprod else '+'} {load(t, f'a0[{_sub(names)}]')}"
    if t.is_int and t.name != "int64":
        step = f"{scalar_type(t)}({step})"
    # float16: each step rounded, as NumPy's accumulate of float16 (out[i] = out[i-1] + x[i])
    inner = [f"if {n} > 0:", f"    acc = {load(t, f'a0[{_sub(first)}]')}",
             f"    o0[{_sub(first)}] = {store(t, 'acc')}",
             f"for j{axis} in range(1, {n}):", f"    acc = {rounded(t, step)}",
             f"    o0[{_sub(names)}] = {store(t, 'acc')}"]
    body = _nest([names[d] for d in outer], [s(x.shape[d]) for d in outer],
                 [f"acc = {lit(t, 0)}"] + inner)
    return _finish(op, group, ["a0"], s, body)
