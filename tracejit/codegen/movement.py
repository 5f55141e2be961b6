"""Groups that only move data, done by NumPy inside the program: no kernel to compile.

A loop group made only of layout ops (slices, transposes, broadcasts, reshapes, reversals: the
im2col copies of a convolution) is one ``np.copyto`` of a chain of NumPy views into its buffer;
``pad`` fills its buffer and copies the operand into a strided view of it; ``concatenate`` is
``np.concatenate(..., out=)``; ``update_slice`` writes its box into x's buffer (in place when
x is not read again) or into a copy. Each rule gives Python source for the program's entry (plan.py).
``sort`` and ``argsort`` are here too: NumPy's sorts beat a generated kernel.
"""
from __future__ import annotations

from ..ir import ops
from ..ir.registry import rule_table
from . import emitters

VIEWS, view = rule_table()     # layout op -> (op, source of its operand) -> source of a view


@view(ops.slice)
def _(op, x):
    a = op.attrs
    return f"{x}[{', '.join(f'{s}:{e}:{st}' for s, e, st in zip(a['starts'], a['stops'], a['steps']))},]"


@view(ops.transpose)
def _(op, x):
    return f"{x}.transpose({tuple(op.attrs['perm'])})"


@view(ops.reshape)
def _(op, x):
    return f"{x}.reshape({tuple(op.attrs['shape'])})"


@view(ops.broadcast_in_dim)
def _(op, x):
    shape, dims = op.attrs["shape"], op.attrs["dims"]
    shaped = [1] * len(shape)
    for i, d in enumerate(dims):
        shaped[d] = op.operands[0].shape[i]
    return f"np.broadcast_to({x}.reshape({tuple(shaped)}), {tuple(shape)})"


@view(ops.window)
def _(op, x):
    a = op.attrs
    if not a["dims"]:
        return x
    return (f"np.lib.stride_tricks.sliding_window_view({x}, {tuple(a['sizes'])}, "
            f"axis={tuple(a['dims'])})")


@view(ops.rev)
def _(op, x):
    dims = op.attrs["dims"]
    if not dims:
        return x
    return f"{x}[{', '.join('::-1' if d in dims else ':' for d in range(op.result.type.ndim))},]"


def is_movement(g) -> bool:
    """Whether NumPy does this group (see the module docstring)."""
    if g.kind == "op":
        return emitters.kind_of(g.ops[0].opdef) == "movement"
    return (g.kind == "loop" and not g.axes and len(g.outputs) == 1 and g.outputs[0].shape != ()
            and all(op.opdef in VIEWS for op in g.ops))


@emitters.register("movement", ops.concatenate)
def _(op, array, out: str) -> list[str]:
    xs = ", ".join(array(v) for v in op.operands)
    return [f"np.concatenate(({xs},), axis={op.attrs['axis']}, out={out})"]


@emitters.register("movement", ops.pad)
def _(op, array, out: str) -> list[str]:
    x, value = op.operands
    a = op.attrs
    if x.type.ndim == 0:
        return [f"{out}[...] = {array(x)}"]
    inner = ", ".join(f"{lo}:{lo + max(n - 1, 0) * (it + 1) + 1 if n else lo}:{it + 1}"
                      for n, lo, it in zip(x.shape, a["low"], a["interior"]))
    if any(a["interior"]):
        fill = [f"{out}[...] = {array(value)}"]
    else:
        # only the borders, as np.pad does: filling the whole buffer first wrote it twice
        # (np.pad(x, 1) of 612 x 816 float32: 0.35 -> 0.2 ms)
        fill = [f"{out}[{', '.join([':'] * d + [f'{s}:{s + w}'])},] = {array(value)}"
                for d, (lo, hi, n) in enumerate(zip(a["low"], a["high"], x.shape))
                for s, w in ((0, lo), (lo + n, hi)) if w]
    return fill + [f"{out}[{inner},] = {array(x)}"]


@emitters.register("movement", ops.update_slice)
def _(op, array, out: str) -> list[str]:
    # ``out`` is x's own buffer when nothing reads x after this (plan.py's in-place updates):
    # then only the box is written
    x, v = (array(u) for u in op.operands)
    box = ", ".join(f"{s.start}:{s.stop}:{s.step}" for s in ops.update_box(
        op.attrs["starts"], op.attrs["steps"], op.operands[1].shape))
    copy = [] if out == x else [f"np.copyto({out}, {x})"]
    return copy + [f"{out}[{box},] = {v}" if box else f"{out}[...] = {v}"]


# Sorting is NumPy's own sort of the op's kind: vectorized, and faster than a Numba kernel
# sorting row by row (1000 rows of 1000 float64: np.sort 8 ms, Numba's np.sort per row 90 ms;
# stable argsort 55 ms against 200 ms), with nothing to compile and ties in NumPy's order.
@emitters.register("movement", ops.sort)
def _(op, array, out: str) -> list[str]:
    a = op.attrs
    return [f"np.copyto({out}, {array(op.operands[0])})",
            f"{out}.sort(axis={a['axis']}, kind={a['kind']!r})"]


@emitters.register("movement", ops.argsort)
def _(op, array, out: str) -> list[str]:
    a = op.attrs
    return [f"{out}[...] = np.argsort({array(op.operands[0])}, axis={a['axis']}, "
            f"kind={a['kind']!r})"]


def movement_lines(g, array, out: str) -> list[str]:
    """Statements that write the group's output into the buffer named ``out``; ``array(v)``
    names an array holding ``v``."""
    if g.kind == "op":
        (op,) = g.ops
        return emitters.RULES[op.opdef][1](op, array, out)
    defined = {r: o for o in g.ops for r in o.results}

    def source(v) -> str:
        o = defined.get(v)
        return array(v) if o is None else VIEWS[o.opdef](o, source(o.operands[0]))
    return [f"np.copyto({out}, {source(g.outputs[0])})"]
