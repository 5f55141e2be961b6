"""Kernel sources for ops with their own loop structure (not fused): pad, concatenate, take,
scatter_add. Like fused kernels they take every size as a parameter, so they are shape-generic.
Their parameters: input arrays ``a*``, the output ``o0``, sizes ``s*``."""
from __future__ import annotations

from ..ir import ops

TEMPLATES: dict = {}


def template(opdef):
    def deco(fn):
        TEMPLATES[opdef] = fn
        return fn
    return deco


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
    from .kernel import KernelSpec, function_source
    params = params_in + [f"o{i}" for i in range(nout)] + [f"s{i}" for i in
                                                            range(len(sizes.values))]
    source = function_source(params, body, False)
    return KernelSpec(source, list(op.operands), list(op.results), [], sizes.values, False)


def _copy_in(sizes, src_shape, out_index, src="a0", dst="o0", op="="):
    names = [f"j{d}" for d in range(len(src_shape))]
    bounds = [sizes(n) for n in src_shape]
    return _nest(names, bounds, [f"{dst}[{_sub(out_index(names))}] {op} {src}[{_sub(names)}]"])


def _fill(sizes, shape, value):
    names = [f"q{d}" for d in range(len(shape))]
    return _nest(names, [sizes(n) for n in shape], [f"o0[{_sub(names)}] = {value}"])


@template(ops.pad)
def _(op, group):
    x, _v = op.operands
    s = _Sizes()
    body = ["v = a1[()]"] + _fill(s, op.result.shape, "v")
    lo = [s(n) for n in op.attrs["low"]]
    step = [s(n + 1) for n in op.attrs["interior"]]
    body += _copy_in(s, x.shape, lambda js: [f"{l} + {j} * {st}"
                                              for l, j, st in zip(lo, js, step)])
    return _finish(op, group, ["a0", "a1"], s, body)


@template(ops.concatenate)
def _(op, group):
    axis = op.attrs["axis"]
    s = _Sizes()
    body, offset = [], 0
    for k, x in enumerate(op.operands):
        off = s(offset)
        body += _copy_in(s, x.shape, lambda js: [f"{off} + {j}" if d == axis else j
                                                  for d, j in enumerate(js)], src=f"a{k}")
        offset += x.shape[axis]
    return _finish(op, group, [f"a{k}" for k in range(len(op.operands))], s, body)


def _gather_index(s, x, idx_rank, axis):
    n = s(x.shape[axis])
    js = [f"j{axis + d}" for d in range(idx_rank)]
    return n, [f"t = a1[{_sub(js)}]", f"if t < 0:", f"    t += {n}",
               f"if t < 0 or t >= {n}:", "    raise IndexError('index out of bounds')"]


@template(ops.take)
def _(op, group):
    x, idx = op.operands
    axis, r = op.attrs["axis"], idx.type.ndim
    s = _Sizes()
    out = op.result.shape
    names = [f"j{d}" for d in range(len(out))]
    _, check = _gather_index(s, x, r, axis)
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
    _, check = _gather_index(s, x, r, axis)
    dst = names[:axis] + ["t"] + names[axis + r:]
    add = f"o0[{_sub(dst)}] = o0[{_sub(dst)}] + a2[{_sub(names)}]"
    if x.dtype.is_bool:
        add = f"o0[{_sub(dst)}] = o0[{_sub(dst)}] or a2[{_sub(names)}]"
    body += _nest(names, [s(n) for n in upd.shape], check + [add])
    return _finish(op, group, ["a0", "a1", "a2"], s, body)
