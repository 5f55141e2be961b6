"""``cond``, ``while_loop`` and ``scan`` as statements: ``if``/``elif``, ``for`` and ``while``
around the code of their regions.

One rule per op serves two planners, because the statements read the same in Python and in
Numba: the program's entry (plan.py: a ``cond``, and a loop whose body no native module can
express) and a native loop module (loops.py: the loop itself and every control op nested in
its body). A planner ``P`` gives ``array(v)`` (the name of an array holding ``v``),
``new_name()``, ``lines`` (where statements go), ``region(fn, names)`` (a region's statements
with its parameters bound to ``names``, and the names of its results), ``bind(v, name)``,
``array_dtype(dtype)`` (the dtype of the arrays it makes: np.float16 in the entry, its uint16
storage in a native module, representation.py), and ``entry`` (True in the Python entry: there a loop that runs zero times copies its carries,
which are still the operands, so that no result aliases an argument or arena memory).

Values are arrays everywhere, 0-d ones too (``np.empty(())``; Numba types ``a[()]``): a slice
``xs[t]`` of a 1-D ``xs`` is a scalar, so it is copied into a 0-d array.
"""
from __future__ import annotations

from ..ir import ops
from ..ir.control_ops import scan_parts
from . import emitters


def indent(lines: list) -> list:
    return ["    " + line for line in lines] or ["    pass"]


def copy_into(P, dst: str, src: str, shape: tuple) -> list:
    """Statements writing array ``src`` into ``dst`` (C-contiguous, of ``shape``). In a native
    module one ``memmove`` of flat views (native.copy_elements): Numba's broadcasting
    ``dst[:] = src`` cost 2.5 s of compile each (a scan's ys and carry copies: 7.3 s of an
    RNN module's), and an element loop, vectorized, ~20 ms of LLVM each (the RNN scan
    step's backward driver had eight)."""
    if not shape:
        return [f"{dst}[()] = {src}[()]"]
    if P.entry:
        return [f"{dst}[...] = {src}"]
    n = 1
    for d in shape:
        n *= d
    d, s = P.new_name("d"), P.new_name("s")
    return [f"{d} = {dst}.reshape({n})", f"{s} = {src}.reshape({n})",
            f"copy_elements({d}, {s}, {n})"]


def _assign(names: list, values: list) -> list:
    if not names:
        return []
    return [f"{', '.join(names)}, = {', '.join(values)},"]


def _empty(P, v) -> str:
    return f"np.empty({tuple(v.shape)}, {P.array_dtype(v.type.dtype)})"


@emitters.register("control", ops.cond)
def cond(P, op, outs: list | None = None):
    """``branches[clip(index)]`` as ``if k == 0: ... elif ...: ... else: ...``."""
    index, *operands = op.operands
    args = [P.array(v) for v in operands]
    names = [P.new_name() for _ in op.results]
    k = P.new_name()
    n = len(op.regions)
    P.lines.append(f"{k} = min(max(int({P.array(index)}[()]), 0), {n - 1})")
    for i, branch in enumerate(op.regions):
        body, res = P.region(branch, args)
        body = body + _assign(names, res)
        if n == 1:
            P.lines += body
            continue
        head = "if" if i == 0 else ("else" if i == n - 1 else "elif")
        P.lines.append(f"{head}:" if head == "else" else f"{head} {k} == {i}:")
        P.lines += indent(body)
    _finish(P, op.results, names, outs)


@emitters.register("control", ops.scan)
def scan(P, op, outs: list | None = None):
    """``for t in range(length)`` (or backwards) over the body; ``ys[t]`` written in place."""
    a = op.attrs
    m, length = a["carries"], a["length"]
    consts, carries, xs = scan_parts(op.operands, a["consts"], m)
    fixed = [P.array(v) for v in consts]
    carry = [P.new_name() for _ in carries]
    P.lines += _assign(carry, [P.array(v) for v in carries])
    xnames = [P.array(v) for v in xs]
    ys = op.results[m:]
    ynames = list(outs[m:]) if outs else [P.new_name() for _ in ys]
    if not outs:
        if P.entry:
            P.lines += [f"{y} = {_empty(P, v)}" for y, v in zip(ynames, ys)]
        else:
            ynames = [P.loop_buffer(tuple(v.shape), v.type.dtype) for v in ys]
    t = P.new_name("t")
    steps = f"range({length} - 1, -1, -1)" if a["reverse"] else f"range({length})"
    loop = []
    slices = []
    for x, v in zip(xnames, xs):
        s = P.new_name()
        if v.type.ndim == 1:      # a scalar in Numba: into a 0-d array
            if P.entry:
                loop.append(f"{s} = np.empty((), {P.array_dtype(v.type.dtype)})")
            else:
                s = P.loop_buffer((), v.type.dtype)
            loop.append(f"{s}[()] = {x}[{t}]")
        else:
            loop.append(f"{s} = {x}[{t}]")
        slices.append(s)
    before = _written(P)
    body, res = P.region(op.regions[0], fixed + carry + slices, carries=(len(fixed), m))
    loop += body
    for y, r, v in zip(ynames, res[m:], ys):
        if v.type.ndim == 1:
            loop.append(f"{y}[{t}] = {r}[()]")
        else:
            loop += copy_into(P, f"{y}[{t}]", r, tuple(v.shape[1:]))
    loop += _next_carries(P, carry, res[:m], carries, before)
    P.lines.append(f"for {t} in {steps}:")
    P.lines += indent(loop)
    if outs:
        for o, c, v in zip(outs[:m], carry, op.results[:m]):
            P.lines += copy_into(P, o, c, tuple(v.shape))
        return
    if P.entry and length == 0:
        carry = _copies(P, carry)
    for r, name in zip(op.results, carry + ynames):
        P.bind(r, name)


@emitters.register("control", ops.while_loop)
def while_loop(P, op, outs: list | None = None):
    """``while True:`` cond_fn, ``break`` on false, body_fn."""
    k = op.attrs["consts"]
    fixed = [P.array(v) for v in op.operands[:k]]
    carry = [P.new_name() for _ in op.operands[k:]]
    P.lines += _assign(carry, [P.array(v) for v in op.operands[k:]])
    cond_fn, body_fn = op.regions
    test, (c,) = P.region(cond_fn, fixed + carry)
    before = _written(P)
    body, res = P.region(body_fn, fixed + carry, carries=(len(fixed), len(carry)))
    P.lines.append("while True:")
    P.lines += indent(test + [f"if not {c}[()]:", "    break"] + body
                      + _next_carries(P, carry, res, op.operands[k:], before))
    # the trip count is not known here: the entry copies its carries (they may be operands)
    _finish(P, op.results, _copies(P, carry) if P.entry else carry, outs)


def _written(P) -> tuple:
    """The buffers a native driver's statements write so far (whole, and updated in place):
    ``_next_carries`` takes over only those that its loop's own body writes."""
    if P.entry:
        return set(), set()
    return set(P.rewritten), set(P.updated_in_place)


def _next_carries(P, carry: list, res: list, values: list, before: tuple) -> list:
    """Statements at the end of an iteration making its results the carries. The entry
    rebinds the names. A native driver allocates its buffers once (loops.py), so the next
    iteration rewrites the buffers these results are in. A carry whose result is a buffer the
    body writes whole every iteration (``P.rewritten``), and no other result, takes that
    buffer over, and the buffer's name swaps with a spare's, so the next iteration writes
    there while reading the carry: the RNN's backward scan copied 360 KB a step. A carry
    whose kernel adds to it in place (``P.updated_in_place``, loops.py) keeps that buffer.
    Any other carry is copied into a buffer of its own (through a temporary when it is
    another carry, as in a swap). Only buffers this loop's body writes (not those in
    ``before``, written outside it) are taken over: a nested loop whose carry became an
    enclosing body's kernel output (``lambda j, g: t``) swapped that buffer's name with its
    spare, and the enclosing body then read the spare's garbage as ``t``. Neither is taken by
    two carries (an ``optimization_barrier`` of the result names the same buffer): a second
    carry holding the updated buffer changed with the next in-place update."""
    if P.entry:
        return _assign(carry, res)
    rewritten = P.rewritten - before[0]
    updated = P.updated_in_place - before[1]
    lines, sources = [], []
    changing = sum(r != c for c, r in zip(carry, res))
    for c, r, v in zip(carry, res, values):
        shape = tuple(v.shape)
        # another carry, rewritten below: keep it first. So is a name that may hold a carry's
        # array when the loop runs (a cond's branch passing carries through swapped, a nested
        # loop that ran zero times or kept its carry); a body kernel's output buffer or an
        # operand (P.fixed) never does.
        if r != c and (r in carry or (changing > 1 and r not in P.fixed)):
            tmp = P.loop_buffer(shape, v.type.dtype)
            lines += copy_into(P, tmp, r, shape)
            r = tmp
        sources.append(r)
    own, swaps = [], []
    for c, r, v in zip(carry, sources, values):
        if r == c:
            own.append(c)                  # unchanged: it keeps its buffer
            continue
        if r in updated and res.count(r) == 1:
            own.append(r)                  # its kernel updated the carry's own buffer
            continue
        if r in rewritten and res.count(r) == 1:
            spare = P.loop_buffer(tuple(v.shape), v.type.dtype)
            swaps.append(f"{r}, {spare} = {spare}, {r}")
            own.append(r)
            continue
        buf = P.loop_buffer(tuple(v.shape), v.type.dtype)
        lines += copy_into(P, buf, r, tuple(v.shape))
        own.append(buf)
    return lines + _assign(carry, own) + swaps


def _copies(P, names: list) -> list:
    copies = [P.new_name() for _ in names]
    P.lines += [f"{c} = {n}.copy()" for c, n in zip(copies, names)]
    return copies


def _finish(P, results, names, outs):
    if outs:
        for o, n, v in zip(outs, names, results):
            P.lines += copy_into(P, o, n, tuple(v.shape))
    else:
        for r, name in zip(results, names):
            P.bind(r, name)
