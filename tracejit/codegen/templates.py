"""Kernel sources for ops with their own loop structure (not fused): pad, concatenate, take,
scatter_add. Like fused kernels they take every size as a parameter, so they are shape-generic.
Their parameters: input arrays ``a*``, the output ``o0``, sizes ``s*``."""
from __future__ import annotations

import numpy as np

from ..ir import ops
from ..ir.registry import rule_table

TEMPLATES, template = rule_table()


class _Sizes:
    def __init__(self):
        self.values: list[int] = []

    def __call__(self, n: int) -> str:
        self.values.append(int(n))
        return f"s{len(self.values) - 1}"


def _sub(idx) -> str:
    idx = list(idx)
    return ", ".join(idx) + ("," if len(idx) == 1 else "") if idx else "()"


def _nest(names, bounds, body, indent="", par=False) -> list[str]:
    """Loops over ``names``; with ``par`` the outermost is a ``prange`` in the parallel variant
    (only where iterations write disjoint elements)."""
    lines, pad = [], indent
    for k, (n, b) in enumerate(zip(names, bounds)):
        rng = "PRANGE" if par and k == 0 else "range"
        lines.append(f"{pad}for {n} in {rng}({b}):")
        pad += "    "
    return lines + [pad + b for b in body]


def _finish(op, group, params_in, sizes, body, nout=1, par_min=None):
    """``par_min``: the kernel may have a parallel variant (its loops use PRANGE) and gets one
    when the output has at least that many elements."""
    from .kernel import KernelSpec, function_source
    params = params_in + [f"o{i}" for i in range(nout)] + [f"s{i}" for i in
                                                            range(len(sizes.values))]
    work = int(np.prod(op.result.shape)) if op.results else 0
    parallel = par_min is not None and work >= par_min and op.result.type.ndim > 0
    source = function_source(params, body, parallel)
    return KernelSpec(source, list(op.operands), list(op.results), [], sizes.values, parallel,
                      work)


def _copy_in(sizes, src_shape, out_index, src="a0", dst="o0", op="=", par=False):
    names = [f"j{d}" for d in range(len(src_shape))]
    bounds = [sizes(n) for n in src_shape]
    return _nest(names, bounds, [f"{dst}[{_sub(out_index(names))}] {op} {src}[{_sub(names)}]"],
                 par=par)


def _fill(sizes, shape, value, par=False):
    names = [f"q{d}" for d in range(len(shape))]
    return _nest(names, [sizes(n) for n in shape], [f"o0[{_sub(names)}] = {value}"], par=par)


@template(ops.pad)
def _(op, group, par_min=None):
    x, _v = op.operands
    s = _Sizes()
    par = x.type.ndim > 0
    body = ["v = a1[()]"] + _fill(s, op.result.shape, "v", par=par)
    lo = [s(n) for n in op.attrs["low"]]
    step = [s(n + 1) for n in op.attrs["interior"]]
    body += _copy_in(s, x.shape, lambda js: [f"{l} + {j} * {st}"
                                              for l, j, st in zip(lo, js, step)], par=par)
    return _finish(op, group, ["a0", "a1"], s, body, par_min=par_min if par else None)


@template(ops.concatenate)
def _(op, group, par_min=None):
    axis = op.attrs["axis"]
    s = _Sizes()
    body, offset = [], 0
    for k, x in enumerate(op.operands):
        off = s(offset)
        body += _copy_in(s, x.shape, lambda js: [f"{off} + {j}" if d == axis else j
                                                  for d, j in enumerate(js)], src=f"a{k}",
                         par=True)
        offset += x.shape[axis]
    return _finish(op, group, [f"a{k}" for k in range(len(op.operands))], s, body,
                   par_min=par_min)


def _gather_index(s, x, idx_rank, axis, op):
    n = s(x.shape[axis])
    js = [f"j{axis + d}" for d in range(idx_rank)]
    # The message names the user's line (so the source, and the cached kernel, differ per
    # line for this one kind of kernel): the traced indices are only known here.
    where = f" at {op.loc}" if op.loc else ""
    msg = (f"tracejit: an index is out of bounds in indexing or np.take{where}: each index "
           "must lie in [-n, n) for an axis of size n")
    return n, [f"t = a1[{_sub(js)}]", "if t < 0:", f"    t += {n}",
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
    body = _nest(names, [s(n) for n in out], check + [f"o0[{_sub(names)}] = a0[{_sub(src)}]"])
    return _finish(op, group, ["a0", "a1"], s, body)


@template(ops.scatter_add)
def _(op, group):
    x, idx, upd = op.operands
    axis, r = op.attrs["axis"], idx.type.ndim
    s = _Sizes()
    body = _copy_in(s, x.shape, lambda js: js)
    names = [f"j{d}" for d in range(upd.type.ndim)]
    _, check = _gather_index(s, x, r, axis, op)
    dst = names[:axis] + ["t"] + names[axis + r:]
    add = f"o0[{_sub(dst)}] = o0[{_sub(dst)}] + a2[{_sub(names)}]"
    if x.dtype.is_bool:
        add = f"o0[{_sub(dst)}] = o0[{_sub(dst)}] or a2[{_sub(names)}]"
    body += _nest(names, [s(n) for n in upd.shape], check + [add])
    return _finish(op, group, ["a0", "a1", "a2"], s, body)
