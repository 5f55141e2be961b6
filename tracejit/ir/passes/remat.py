"""Automatic rematerialization (``jit(f, remat="auto")``): recompute cheap intermediates
(elementwise, layout, padding) where a late use reads them, instead of keeping them alive
until then.

Why: in a Function holding a reverse-mode gradient, the backward ops read forward values
(residuals) that stay alive from the forward pass to the backward pass, and they set the
arena's peak. A residual made by an elementwise op (``maximum(z, 0)``, ``tanh``, ``exp``...)
from values that are alive at its backward use anyway is cheaper to compute again there than
to keep: fusion puts the copy into the backward kernel that reads it, and the bytes it held
across the gap are free for the arena to reuse.

Forward and backward: nothing in the IR marks them (autodiff emits backward ops into the same
trace, and after inlining and optimization the cotangent seed is usually a folded constant),
so the pass uses the shape of the program instead: a use is *late* when a "boundary" op (a
matmul, reduction, gather, scatter, linear algebra or control-flow op) runs between it and
the value's previous use (or its definition), and the widest such gap (most boundary ops) is the
one taken. In a gradient program that is the step from the forward pass's last reads to the
backward pass's first; nothing here depends on it being one,
since every choice below is safe anyway.

The rule, per value ``v`` chosen (its op allowed by the policy; one result; not a parameter or
a result of the Function): ``v``'s op is copied right before its first late use, and every
late use reads the copy. Each operand of the copy must be *available* there without extending
any live range: a parameter or constant, a value with a use at or after that point anyway (a
kept residual), the copy of another chosen value, or else a value recomputed on the spot by
the same rule, at most ``depth`` ops deep. Values are chosen greedily, largest first, and a
choice is dropped if it would take away a value another choice reads. The rewrite is kept when
the peak of intermediate bytes alive (what the arena holds) does not grow and it drops, or the
activations (bytes held idle across a boundary op: ``peaks``) drop by more than a tenth.

CSE would merge each copy back into its original (same op, same operands): this pass runs
after the optimizer's fixpoint, as the last pass before fusion, and no CSE runs after it.
Recomputation is bitwise: the same ops on the same values, in the same order.
"""
from __future__ import annotations

from ..graph import Function, Op, Value
from .. import ops
from .inline import inline_calls
from .liveness import nbytes
from .rewrite import Rewriter

BOUNDARY = ("matmul", "reduction", "scan", "gather", "scatter", "linalg", "control")
CHEAP_CATEGORIES = ("elementwise", "layout")
CHEAP_MOVEMENT = ("pad",)
MODES = ("none", "auto")


def default_policy(op: Op) -> bool:
    """Elementwise ops (``add``, ``mul``, ``tanh``, ``exp``, ``where``, ``convert``...),
    layout ops (broadcasts, reshapes, transposes, slices, windows) and padding: a copy of
    them fuses into the kernel that reads it, or is one pass over memory (a convolution's
    im2col columns, rebuilt from its input in the backward pass instead of kept from the
    forward pass). Not matmuls, reductions, gathers: recomputing those costs real work."""
    return op.opdef.category in CHEAP_CATEGORIES or op.opdef.name in CHEAP_MOVEMENT


def check_mode(remat):
    """``remat`` as given to ``jit``: "none", "auto" or a callable ``policy(op) -> bool``."""
    if remat is None or callable(remat) or remat in MODES:
        return remat
    raise ValueError(f"tracejit.jit: remat={remat!r}; choose 'none', 'auto' or a callable "
                     f"policy(op) -> bool deciding which ops may be recomputed")


def policy_of(remat):
    """The policy of a ``remat`` option, or None when it asks for no rematerialization."""
    check_mode(remat)
    if remat is None or remat == "none":
        return None
    return default_policy if remat == "auto" else remat


def _boundary(op: Op) -> bool:
    return bool(op.regions) or op.opdef.category in BOUNDARY or op.opdef.name in (
        "take", "scatter_add", "scatter", "sort", "argsort", "cumsum", "cumprod")


class _Plan:
    """Positions, uses and the chosen values with their split points."""

    def __init__(self, fn: Function, policy, depth: int, min_bytes: int):
        self.fn, self.policy, self.depth = fn, policy, depth
        self.at = {r: i for i, op in enumerate(fn.ops) for r in op.results}
        self.uses: dict = {}
        for i, op in enumerate(fn.ops):
            for v in op.operands:
                self.uses.setdefault(v, []).append(i)
        self.results = set(fn.results)
        walls = [0]
        for op in fn.ops:
            walls.append(walls[-1] + _boundary(op))
        self.walls = walls               # walls[i]: boundary ops among ops[:i]
        self.split: dict = {}            # chosen value -> index of its first late use
        self.candidates = {}
        for i, op in enumerate(fn.ops):
            if len(op.results) != 1 or not self._recomputable(op):
                continue
            v = op.results[0]
            if v in self.results or nbytes(v) < min_bytes:
                continue
            s = self._late(v)
            if s is not None:
                self.candidates[v] = s

    def _recomputable(self, op: Op) -> bool:
        return (not op.regions and not op.opdef.side_effect
                and op.opdef not in (ops.optimization_barrier, ops.call, ops.constant)
                and bool(self.policy(op)))

    def _late(self, v: Value):
        """The use of ``v`` after the widest gap (most boundary ops) since the use before it
        (or its definition): in a gradient program, its first backward use. None if no
        boundary op separates any two."""
        best, prev, split = 0, self.at[v], None
        for q in sorted(set(self.uses.get(v, []))):
            gap = self.walls[q] - self.walls[prev + 1]
            if gap > best:
                best, split = gap, q
            prev = q
        return split

    def available(self, x: Value, p: int) -> bool:
        """Whether ``x`` (or its copy) is alive at op ``p`` anyway."""
        if x not in self.at or x in self.results or x.op.opdef is ops.constant:
            return True                  # a parameter, a result, a constant
        s = self.split.get(x)
        return any(q >= p and (s is None or q < s or s <= p) for q in self.uses.get(x, []))

    def buildable(self, v: Value, p: int, depth: int) -> bool:
        """Whether ``v``'s op can be recomputed at ``p`` from available values."""
        return all(self.available(x, p) or (
            depth > 0 and x.op is not None and len(x.op.results) == 1
            and self._recomputable(x.op) and self.buildable(x, p, depth - 1))
            for x in v.op.operands)

    def choose(self):
        for v in sorted(self.candidates, key=lambda v: (-nbytes(v), self.at[v])):
            self.split[v] = self.candidates[v]
            if not all(self.buildable(w, s, self.depth) for w, s in self.split.items()):
                del self.split[v]


def _rewrite(plan: _Plan) -> tuple[Function, int]:
    """The Function with each chosen value's op copied before its first late use. Every use
    after that point is late, so from there on the copy replaces the value outright."""
    split = plan.split
    by_point: dict = {}
    for v, s in split.items():
        by_point.setdefault(s, []).append(v)
    rw = Rewriter(plan.fn)
    added = 0

    def operand(x: Value, p: int, depth: int, local: dict) -> Value:
        if plan.available(x, p):
            return rw.get(x)             # x, or its copy once past its split point
        if x not in local:               # recomputed on the spot for this point only
            local[x] = emit(x, p, depth - 1, local)
        return local[x]

    def emit(v: Value, p: int, depth: int, local: dict) -> Value:
        nonlocal added
        op = v.op
        new = rw.new(op.opdef, [operand(x, p, depth, local) for x in op.operands], op.attrs,
                     op.loc)
        new.results[0].name = v.name
        added += 1
        return new.results[0]

    for i, op in enumerate(plan.fn.ops):
        local: dict = {}
        for v in sorted(by_point.get(i, []), key=plan.at.__getitem__):
            rw.replace(v, emit(v, i, plan.depth, local))
        rw.keep(op)
    return rw.finish(), added


def _group_lifetimes(fn: Function):
    """The fusion groups of ``fn`` and, for each group output the arena holds (neither a
    parameter nor a result), the groups that make and read it: {value: [born, use, ...]};
    and ``walls[i]``, the groups with a boundary op among the first ``i``."""
    from .fusion import fuse           # fusion imports the passes' package
    fusion = fuse(inline_calls(fn))
    outside = set(fusion.function.params) | set(fusion.function.results)
    points: dict = {}
    walls = [0]
    for g in fusion.groups:
        walls.append(walls[-1] + any(_boundary(op) for op in g.ops))
    for i, g in enumerate(fusion.groups):
        for v in g.inputs:
            if v in points:
                points[v].append(i)
        for v in g.outputs:
            if v not in outside:
                points[v] = [i]
    return len(fusion.groups), points, walls


def _peak(n: int, spans) -> int:
    """The most bytes alive at once, given (bytes, first group, last group) spans."""
    delta = [0] * (n + 2)
    for size, a, b in spans:
        delta[a] += size
        delta[b + 1] -= size
    peak = total = 0
    for d in delta:
        total += d
        peak = max(peak, total)
    return peak


def peaks(fn: Function) -> tuple[int, int]:
    """(intermediate peak, activation peak) of ``fn``, from one fusion of it.

    The intermediate peak is the most bytes the arena holds at once: the outputs of the fusion
    groups (values fused inside a kernel are never stored), neither parameters (the caller's
    arrays) nor results (fresh arrays handed back), each alive from its group to the last
    group reading it (the liveness of the unfused ops would count every elementwise temporary
    instead). The activation peak counts those held *idle*: alive between two groups that use
    them, with no use in between and a boundary op (a matmul, a reduction...) between them.
    In a gradient program that is what the forward pass keeps for the backward pass
    (activation memory); a value read by the next few data-movement kernels does not count."""
    n, points, walls = _group_lifetimes(fn)
    held = _peak(n, ((nbytes(v), p[0], p[-1]) for v, p in points.items()))
    idle = _peak(n, ((nbytes(v), a + 1, b - 1) for v, p in points.items()
                     for a, b in zip(p, p[1:]) if walls[b] > walls[a + 1]))
    return held, idle


def intermediate_peak(fn: Function) -> int:
    return peaks(fn)[0]


def remat(fn: Function, policy=default_policy, depth: int = 8, min_bytes: int = 1024,
          stats: dict | None = None) -> Function:
    """``fn`` with cheap late-read intermediates recomputed (module docstring); ``stats``, if
    given, gets ``values_recomputed``, ``ops_added``, ``peak_before``, ``peak_after`` and
    ``bytes_saved`` (the peak of intermediate bytes alive, ``intermediate_peak``), and
    ``activations_before`` / ``activations_after`` (``peaks``). The rewrite is
    kept when the peak does not grow and the peak drops or the activations drop by more than
    a tenth (a few recomputed bytes are not worth their kernel time)."""
    plan = _Plan(fn, policy, depth, min_bytes)
    plan.choose()
    before, held_before = peaks(fn)
    out, added, after, held_after = fn, 0, before, held_before
    if plan.split:
        out, added = _rewrite(plan)
        after, held_after = peaks(out)
        if after > before or (after == before and held_after > 0.9 * held_before):
            out, added, after, held_after = fn, 0, before, held_before
    if stats is not None:
        stats.update(values_recomputed=len(plan.split) if out is not fn else 0,
                     ops_added=added, peak_before=before, peak_after=after,
                     bytes_saved=before - after, activations_before=held_before,
                     activations_after=held_after)
    return out
