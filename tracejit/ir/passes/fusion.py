"""Fusion grouping: which ops run together in one kernel.

Ops are visited from last to first; an op joins the group of its users when all its users are
in one group and the group stays legal, otherwise it starts a group. An elementwise or layout
op whose users are in several groups joins the one that runs first, if that is a loop group,
and is written out there for the others (multi-output fusion: a kernel less). A ``loop`` group is one
loop nest over a space F (a shape) with reductions over axes A of F: elementwise ops and
layout ops (folded into index arithmetic) at any shape, reductions over A, and the ops that use
their results at the outer index (F without A). A ``matmul`` group is a BLAS call followed by
elementwise epilogue ops in one pass over its output. Other ops (pad, concatenate, take,
scatter_add) get ``op`` groups; a matmul group also holds its *operand ops*: a 2-D transpose
and/or a reshape of an array computed elsewhere that only the matmul reads, which the kernel
passes to BLAS as a view (``x.T`` is an F-contiguous view: a transpose flag, no copy).
A group never reaches through a reshape that regroups dims (more than adding or dropping
size-1 dims) to the value it reshapes: indexing through it costs an integer division and
remainder per dim and element, much more than materializing the value, whose reshape is then
a free view (a group of just such a reshape is a view in the plan). ``optimization_barrier`` is
an ``alias`` (no copy) and ``debug_print`` an ``effect``; no group reaches through either.
A control op (``cond``, ``while_loop``, ``scan``) is a ``control`` group of its own: its inputs
are its operands, its outputs its results, and nothing fuses across it (its regions are fused
on their own when codegen plans them).
Constants are not grouped: they are kernel arguments. A broadcast used in several places is
first copied once per user, so that each kernel indexes the broadcast operand instead of
reading a materialized full-size copy (``maximum(z, 0)`` and ``z > 0`` both read the scalar 0).
After grouping, a loop group that reads only one matmul group's results (and parameters or
constants) at its full index joins that group's epilogue, which then writes both: the ReLU of a
pre-activation that the backward pass keeps runs in the matmul's pass over its output.

Cost model: fusing never computes more than NumPy would. A costly op (a transcendental) does
not join a group in which it would be recomputed: one reading a value broadcast along a loop
outside the loops it varies with (``recomputes``); it starts a kernel over its own shape.

Legality is checked by following index tuples from the group's outputs down to its inputs,
symbolically (dims of F named ``d0, d1, ...``, ``0`` for a broadcast size-1 dim, ``?`` for anything computed): a
reduction must be reached only at the outer index, a matmul only at the full index.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import ops
from ..graph import Function, Op
from ..printer import print_function

LOOP_CATEGORIES = ("elementwise", "layout")


def is_reduction(op: Op) -> bool:
    return op.opdef.category == "reduction"


def reduction_axes(op: Op) -> tuple:
    return (op.attrs["axis"],) if "axis" in op.attrs else tuple(op.attrs["axes"])


@dataclass(eq=False)
class FusionGroup:
    id: int
    kind: str                          # loop | matmul | op | alias | effect | control
    ops: list = field(default_factory=list)   # in program order once fusion is done
    space: tuple = ()                  # F: the loop nest's full shape
    axes: tuple = ()                   # A: reduced axes of F
    head: Op | None = None             # the matmul of a matmul group
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    operand_ops: list = field(default_factory=list)   # matmul: transposes/reshapes of operands

    @property
    def outer(self) -> tuple:
        return tuple(n for d, n in enumerate(self.space) if d not in self.axes)

    @property
    def reductions(self) -> list:
        return [op for op in self.ops if is_reduction(op)]

    def __repr__(self) -> str:
        what = f"space={list(self.space)}" + (f" axes={list(self.axes)}" if self.axes else "")
        return f"<g{self.id} {self.kind} {what} ops={len(self.ops)}>"


@dataclass
class Fusion:
    function: Function
    groups: list          # in execution order
    group_of: dict        # Op -> FusionGroup

    def label(self, op: Op):
        g = self.group_of.get(op)
        return f"g{g.id} {g.kind}" if g is not None else None

    def __str__(self) -> str:
        return print_function(self.function, annotate=self.label)


def regroups(op: Op) -> bool:
    """A reshape that is not just adding or dropping size-1 dims."""
    x = op.operands[0]
    return ([n for n in x.shape if n != 1] != [n for n in op.attrs["shape"] if n != 1])


def _operand_op(op: Op, users: list, g: FusionGroup) -> bool:
    """Can ``op`` join matmul group ``g`` as a view of a matmul operand?"""
    if op.opdef is ops.transpose:
        return (tuple(op.attrs["perm"]) == (1, 0) and all(u is g.head for u in users))
    if op.opdef is ops.reshape:
        return (op.operands[0].type.ndim > 0 and all(
            u is g.head or (u in g.operand_ops and u.opdef is ops.transpose) for u in users))
    return False


def index_map(op: Op, idx: tuple) -> tuple:
    """The symbolic index of ``op``'s first operand when its result is read at ``idx``: the
    layout op's own map (OpDef.index_map), ``idx`` itself for an elementwise op."""
    if op.opdef.category == "layout":
        return op.opdef.index_map(op, idx)
    assert op.opdef.category == "elementwise", op
    return idx


def same_index(idx: tuple, ref: tuple, shape: tuple) -> bool:
    """Whether two symbolic indices of an array of ``shape`` name the same element: along a
    size-1 dim every index is ``0`` (a batch of one reads its reduction through a broadcast
    size-1 dim, named ``0``, and through the outer loop's own index)."""
    return len(idx) == len(ref) and all(
        a == b or n == 1 for a, b, n in zip(idx, ref, shape))


def _legal(g: FusionGroup, outputs: list, inside: set) -> dict | None:
    """The symbolic indices at which each value inside ``g`` is read, or None if ``g`` is not
    legal."""
    # Dims of F are named d0, d1, ...: never the literal 0 that a broadcast size-1 dim reads.
    full = tuple(f"d{d}" for d in range(len(g.space)))
    outer = tuple(f"d{d}" for d in range(len(g.space)) if d not in g.axes)
    requests: dict = {}
    for v in outputs:
        if v.shape == g.space:
            requests.setdefault(v, set()).add(full)
        elif v.shape == g.outer and g.kind == "loop":
            requests.setdefault(v, set()).add(outer)
        else:
            return None
    for op in reversed(g.ops):
        wanted = requests.get(op.result, set()) if op.results else set()
        if is_reduction(op):
            if not all(same_index(i, outer, g.outer) for i in wanted):
                return None
            if op.operands[0] in inside:
                requests.setdefault(op.operands[0], set()).add(full)
            continue
        if op is g.head:
            if not all(same_index(i, full, g.space) for i in wanted):
                return None
            continue
        for i in wanted:
            if op.opdef.category == "layout":
                operand_idx = [index_map(op, i)]
            else:
                operand_idx = [i] * len(op.operands)
            for v, oi in zip(op.operands, operand_idx):
                if v in inside:
                    requests.setdefault(v, set()).add(oi)
    return requests


def recomputes(g: FusionGroup, op: Op, requests: dict) -> bool:
    """Whether ``op`` inside ``g`` would be computed more often than once per element of its
    own result, as NumPy computes it: it reads a value broadcast along a loop of ``g`` that is
    outside the loops it varies with (``x * np.exp(b)`` with ``b`` along the rows recomputes
    the exp for every row). A loop group places each value just inside the outermost loop
    covering its indices (codegen/kernel.py), so only a broadcast dim outside them repeats it;
    a matmul epilogue places nothing, so any broadcast dim does. In a group with reductions,
    a value read at the outer index is computed once per outer element: not modelled here."""
    if g.axes:
        return False
    for idx in requests.get(op.result, ()):
        if "?" in idx:
            continue                    # a computed index: no claim either way
        used = {int(i[1:]) for i in idx if i.startswith("d")}
        if not used:
            continue                    # loop-invariant: computed once, before the loops
        inner = max(used) if g.head is None else len(g.space)
        if any(g.space[m] > 1 for m in range(inner) if m not in used):
            return True
    return False


def _computed_at_several_indices(op: Op, requests: dict) -> bool:
    """Whether ``op`` computes a value the group would read at more than one index (a stencil
    reading it shifted: NPBench's hdiff reads its Laplacian at four): fused, it is computed
    again for each, where NumPy computes it once and reads it four times. Layout ops and
    constants only move or name values and may be read anywhere."""
    if op.opdef.category == "layout" or not op.operands:
        return False
    return len(requests.get(op.result, ())) > 1


# A value computed inside a group and read through a layout op is computed again at each
# index it is read at; through a chain of them the work multiplies. Floyd-Warshall's k steps
# of ``np.minimum(p, np.add.outer(p[:, k], p[k, :]))`` read each step's p at three indices:
# fused into one group, 12 steps made 50 KB of kernel source and 60 steps a kernel that did
# not finish compiling in minutes. A group keeps at most REREAD_MAX layout ops between a
# value computed inside it and the group's outputs.
REREAD_MAX = 6

# Each join checks the whole group again, so one chain of n elementwise ops fused into one
# group cost O(n^2): a Python loop unrolled into 1,000 ops took 54 s to compile and 10,000
# did not finish in an hour. A longer chain is split into groups of at most this many ops
# (a kernel each, an intermediate array between them).
GROUP_OPS_MAX = 128


def rereads(g: FusionGroup, inside: set) -> int:
    """The most layout ops on one path from a value computed in ``g`` to ``g``'s outputs."""
    depth: dict = {}
    worst = 0
    for op in reversed(g.ops):
        d = max((depth.get(r, 0) for r in op.results), default=0)
        bump = 1 if op.opdef.category == "layout" else 0
        for v in op.operands:
            if v in inside:
                depth[v] = max(depth.get(v, 0), d + bump)
                worst = max(worst, depth[v])
    return worst


class _Grouper:
    def __init__(self, fn: Function):
        self.fn = fn
        self.users = fn.uses()
        self.results = set(fn.results)
        self.group_of: dict = {}
        self.groups: list = []
        self.pos = {op: i for i, op in enumerate(fn.ops)}

    def outputs(self, g: FusionGroup) -> list:
        inside = set(g.ops)
        return [r for op in g.ops for r in op.results
                if r in self.results or any(u not in inside for u in self.users.get(r, ()))]

    def check(self, g: FusionGroup, op: Op | None = None) -> bool:
        """Whether ``g`` (just joined by ``op``) is legal and, by the cost model, worth it:
        a costly op (a transcendental) joins only if it is not recomputed there."""
        if len(g.ops) > GROUP_OPS_MAX and op is not None and op.opdef.category != "layout":
            return False
        g.ops.sort(key=self.pos.__getitem__)
        inside = {r for op in g.ops for r in op.results}
        requests = _legal(g, self.outputs(g), inside)
        if requests is None:
            return False
        if rereads(g, inside) > REREAD_MAX:
            return False
        if op is not None and _computed_at_several_indices(op, requests):
            return False
        return op is None or not op.opdef.costly or not recomputes(g, op, requests)

    def try_join(self, op: Op) -> FusionGroup | None:
        if len(op.results) != 1:
            return None
        v = op.result
        users = self.users.get(v, [])
        groups = {id(self.group_of.get(u)): self.group_of.get(u) for u in users}
        if not groups or None in groups.values():
            return None
        if len(groups) > 1:
            return self.join_first_user(op, list(groups.values()))
        (g,) = groups.values()
        if g.kind not in ("loop", "matmul"):
            return None
        if g.head is not None and any(u is g.head or u in g.operand_ops for u in users):
            if not _operand_op(op, users, g):
                return None
            g.ops.append(op)
            g.operand_ops.append(op)
            self.group_of[op] = g
            # Every join is checked: an operand view that is also a result (a vjp residual)
            # would be written over the matmul's space, not its own shape.
            if self.check(g):
                return g
            g.ops.remove(op)
            g.operand_ops.remove(op)
            del self.group_of[op]
            return None
        if any(u.opdef is ops.reshape and regroups(u) for u in users):
            return None
        saved = (g.kind, g.space, g.axes, g.head)
        cat = op.opdef.category
        if is_reduction(op):
            space, axes = op.operands[0].shape, reduction_axes(op)
            if g.kind != "loop":
                return None
            if g.axes:
                if (space, axes) != (g.space, g.axes):
                    return None
            elif g.space in (space, tuple(n for d, n in enumerate(space) if d not in axes)):
                g.space, g.axes = space, axes
            else:
                return None
        elif op.opdef is ops.matmul:
            if g.kind != "loop" or g.axes or g.space != v.shape or v in self.results:
                return None
            if any(u.opdef.category != "elementwise" for u in users):
                return None
            g.kind, g.head = "matmul", op
        elif cat not in LOOP_CATEGORIES:
            return None
        if self.add_if_legal(g, op):
            return g
        g.kind, g.space, g.axes, g.head = saved
        return None

    def add_if_legal(self, g: FusionGroup, op: Op) -> bool:
        """Put ``op`` in ``g`` if ``g`` stays legal and worth it (``check``); else leave it."""
        g.ops.append(op)
        self.group_of[op] = g
        if self.check(g, op):
            return True
        g.ops.remove(op)
        del self.group_of[op]
        return False

    def join_first_user(self, op: Op, groups: list) -> FusionGroup | None:
        """An elementwise or layout op whose users are in several groups joins the one that
        runs first, if it is a loop group, and is written out there for the others: a
        kernel less (``exp(z)`` computed in the kernel summing it, for softmax's backward to
        read; the RNN step's ``y - t`` in the kernel of its squared sum)."""
        if op.opdef.category not in LOOP_CATEGORIES or op.result.shape == ():
            return None
        if any(v.op is not None and v.op.opdef is ops.matmul for v in op.operands):
            # in a group of its own it becomes the epilogue of that matmul, which runs on
            # the product's blocks in parallel (the ReLU mask of a backward product: in the
            # bias gradient's kernel it ran serially, 0.64 ms of a 7 ms MLP step)
            return None
        first = min(groups, key=self.last_pos)
        if first.kind != "loop" or any(
                self.last_pos(g) <= self.last_pos(first) for g in groups if g is not first):
            return None
        if op.opdef.category == "layout" and op.opdef is ops.reshape and regroups(op):
            return None
        return first if self.add_if_legal(first, op) else None

    def start(self, op: Op) -> FusionGroup:
        g = FusionGroup(len(self.groups), "op", [op])
        if is_reduction(op):
            g.kind, g.space, g.axes = "loop", op.operands[0].shape, reduction_axes(op)
        elif op.opdef.category in LOOP_CATEGORIES:
            g.kind, g.space = "loop", op.result.shape
        elif op.opdef is ops.matmul:
            g.kind, g.space, g.head = "matmul", op.result.shape, op
        elif op.opdef is ops.optimization_barrier:
            g.kind = "alias"
        elif op.opdef.side_effect:
            g.kind = "effect"
        elif op.opdef.category == "control":
            g.kind = "control"
        self.groups.append(g)
        self.group_of[op] = g
        return g

    def last_pos(self, g: FusionGroup) -> int:
        """Groups run in the order of their last ops."""
        return max(self.pos[o] for o in g.ops)

    def producers(self, g: FusionGroup) -> list:
        inside = {r for op in g.ops for r in op.results}
        found = {}
        for op in g.ops:
            for v in op.operands:
                p = self.group_of.get(v.op) if v not in inside and v.op is not None else None
                if p is not None:
                    found[id(p)] = p
        return list(found.values())

    def in_order(self) -> bool:
        """Whether running groups by their last ops runs every producer first."""
        return all(self.last_pos(p) < self.last_pos(g)
                   for g in self.groups for p in self.producers(g))

    def merge_into_epilogue(self, g: FusionGroup):
        """Join loop group ``g`` to the matmul group it alone reads from, if legal."""
        if g.kind != "loop" or g.axes:
            return
        producers = self.producers(g)
        if len(producers) != 1:
            return
        (m,) = producers
        if m.kind != "matmul" or m.space != g.space:
            return
        saved = list(m.ops)
        m.ops.extend(g.ops)
        for op in g.ops:
            self.group_of[op] = m
        self.groups.remove(g)
        if self.check(m) and self.in_order():
            return
        m.ops = saved
        for op in g.ops:
            self.group_of[op] = g
        self.groups.append(g)

    def run(self) -> Fusion:
        for op in reversed(self.fn.ops):
            if op.opdef is ops.constant:
                continue
            if op.opdef is ops.call:
                raise ValueError("fusion needs a Function without call ops: run inline_calls")
            if self.try_join(op) is None:
                self.start(op)
        for g in list(self.groups):
            self.merge_into_epilogue(g)
        groups = sorted(self.groups, key=self.last_pos)
        for i, g in enumerate(groups):
            g.id = i
            g.ops.sort(key=self.pos.__getitem__)
            defined = {r for op in g.ops for r in op.results}
            seen = set()
            for op in g.ops:
                for v in op.operands:
                    if v not in defined and v not in seen:
                        seen.add(v)
                        g.inputs.append(v)
            g.outputs = self.outputs(g)
        return Fusion(self.fn, groups, self.group_of)


def broadcast_per_user(fn: Function) -> Function:
    """``fn`` with each broadcast that several ops use copied once per user op."""
    uses = fn.uses()
    rename: dict = {}        # value of a rebuilt op -> its new value
    per_user: dict = {}      # (user op, broadcast value) -> that user's copy
    out = []
    for op in fn.ops:
        operands = [per_user.get((op, v), rename.get(v, v)) for v in op.operands]
        if operands != op.operands:
            new = Op(op.opdef, operands, op.attrs, [r.type for r in op.results], op.loc,
                     op.regions)
            for r, nr in zip(op.results, new.results):
                nr.name = r.name
                rename[r] = nr
            kept = new
        else:
            kept = op
        out.append(kept)
        if op.opdef is not ops.broadcast_in_dim:
            continue
        users = list(dict.fromkeys(uses.get(op.result, ())))
        for u in users[1:]:          # the first user keeps the original
            copy = Op(op.opdef, kept.operands, op.attrs, [op.result.type], op.loc)
            out.append(copy)
            per_user[(u, op.result)] = copy.result
    if len(out) == len(fn.ops) and not rename:
        return fn
    return Function(fn.name, fn.params, out, [rename.get(r, r) for r in fn.results])


def fuse(fn: Function) -> Fusion:
    """Group ``fn``'s ops into kernels (see the module docstring)."""
    return _Grouper(broadcast_per_user(fn)).run()
