"""A ``scan`` or ``while_loop`` as ONE native Numba module: no Python per iteration.

The body is optimized and fused like any Function, and its kernels (kernel.py, templates.py)
are ordinary kernel modules, compiled once and shared with every other program (the same
cell unrolled, another loop). The module holds only a driver ``kernel(a0.., o0.., f0.., lo,
hi)`` (the calling convention of every kernel, so the plan, the disk cache, compile workers and
warm loads treat it as one more kernel) that runs the loop (control.py's statements, the same
as in the entry) and calls each body kernel serially over its whole range through the address
of its C wrapper (``f0..``, native.py's ``call_address``): nothing is linked into the driver
and optimized again. A first version compiled the body kernels into the module: an RNN step's
backward loop took 5.4 s to compile, its driver alone about 2 s of that, since LLVM
re-optimized every linked kernel with it.

Inside the driver: buffers are ``np.empty`` once, before the loops, and rewritten by every
iteration; a carry whose next value is in such a buffer takes that buffer over, and the body
writes the next iteration's value into a spare one (the two swap names each iteration, no
copy); other carries are copied into buffers of their own (control.py). No allocation is
left inside a loop, so codegen/direct compiles the driver (Numba compiled one in 1-1.2 s).
No arena, no result pool, no threads; scalar constants are typed literals, array constants extra arguments (after the
operands), sizes literals; a group of layout ops is a generated kernel, ``pad`` and
``concatenate`` are slice assignments. Control ops nested in the body are Numba
``if``/``for``/``while`` in the same driver.

What the driver cannot express raises ``Unsupported`` while the module is generated (never
while it compiles): ``sort``/``argsort`` (NumPy's sorts), ``debug_print``, the LAPACK ops.
The plan then runs that loop as a Python loop in the entry, the body's kernels called once per
iteration: correct, but with Python's overhead each step; the entry says so in a comment
(``lower(...).source``).
"""
from __future__ import annotations

import dataclasses

from ..ir import ops
from ..ir.passes import fuse, optimize
from . import emitters
from .control import copy_into
from .kernel import generate_kernel, is_scalar_constant
from .movement import is_movement
from .representation import lit, storage_literal, storage_type
from .source import HEADER, KernelSpec

_FLAGS = 'cache=True, nogil=True, error_model="numpy"'
_IMPORT = "from tracejit.codegen.native import call_address, copy_elements\n"
# No kernel of a body runs on threads: the driver calls each serially.
_SERIAL = 1 << 62


_FAILED = "tracejit: a kernel of a loop's body raised an exception"


def _raises(source: str) -> list:
    """``(class name, message)`` of each ``raise Cls('message')`` of a kernel's source, in
    the order of the source (codegen/direct numbers a kernel's exception codes so, from 1);
    a raise of another form or class is the generic ``_FAILED``."""
    import ast
    import builtins
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Raise):
            continue
        exc, item = node.exc, ("RuntimeError", _FAILED)
        if (isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name)
                and len(exc.args) == 1 and not exc.keywords
                and isinstance(exc.args[0], ast.Constant) and isinstance(exc.args[0].value, str)
                and isinstance(getattr(builtins, exc.func.id, None), type)
                and issubclass(getattr(builtins, exc.func.id), Exception)):
            item = (exc.func.id, exc.args[0].value)
        found.append(((node.lineno, node.col_offset), item))
    return [item for _, item in sorted(found)]


def _returning_codes(source: str) -> str:
    """``source`` with its k-th ``raise`` statement (in ``_raises``'s order) a ``return k``."""
    import ast
    lines = source.splitlines(True)
    found = sorted((node.lineno, node.col_offset, node.end_lineno)
                   for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Raise))
    for code, (line, col, end) in reversed(list(enumerate(found, start=1))):
        if line != end:
            raise Unsupported("a body kernel's raise over several lines")
        text = lines[line - 1]
        lines[line - 1] = text[:col] + f"return {code}\n"
    return "".join(lines)


class Unsupported(Exception):
    """A body the native driver cannot express (the message says which op)."""


def literal(v) -> str:
    """A scalar constant as a literal of its compute type, as kernels' ``c*`` take it."""
    return lit(v.type.dtype, v.op.attrs["value"][()])


class NativeLoop:
    """Builds the module of one loop op: ``spec()`` gives its KernelSpec."""

    entry = False

    def __init__(self, op):
        self.op = op
        self.names: dict = {}
        self.lines: list[str] = []
        self.callees: list = []         # the body kernels' KernelSpecs, called by address
        self._callee_of: dict = {}      # (source, argument types) -> its index in callees
        self.constants: list = []       # array constant Values, passed after the operands
        self.prologue: list[str] = []   # buffers, allocated once before the loops
        self.fixed: set = set()         # names bound once: buffers, operands, constants
        # buffers a body statement writes whole each time it runs (a kernel's output, a
        # movement op's): a carry can take one over instead of copying it (control.py)
        self.rewritten: set = set()
        # a carry's parameter -> the body's result for that carry, where the carry is read
        # by one op alone and is no result: a kernel adding to it may write it in place
        self.in_place_carries: dict = {}
        self.updated_in_place: set = set()   # buffers such kernels write (control.py)
        self.n = 0

    # -- the planner interface of control.py ------------------------------------------------
    def new_name(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def bind(self, v, name: str):
        self.names[v] = name

    def array(self, v) -> str:
        if v not in self.names:
            if v.op is None or v.op.opdef is not ops.constant:
                raise AssertionError(f"{v} has no name in the native loop")
            self.names[v] = f"a{len(self.op.operands) + len(self.constants)}"
            self.fixed.add(self.names[v])
            self.constants.append(v)
        return self.names[v]

    def region(self, fn, arg_names: list, carries=(0, 0)) -> tuple[list, list]:
        """The region's statements and result names; ``carries``: (first, count) of the
        parameters that are loop carries, the first ``count`` results their next values."""
        fusion = fuse(optimize(fn))
        f = fusion.function
        for p, name in zip(f.params, arg_names):
            self.names[p] = name
        first, count = carries
        reads = {}
        for op in f.ops:
            for v in op.operands:
                reads[id(v)] = reads.get(id(v), 0) + 1
        for j in range(count):
            p, r = f.params[first + j], f.results[j]
            if (reads.get(id(p), 0) == 1 and not any(x is p for x in f.results)
                    and sum(x is r for x in f.results) == 1):
                self.in_place_carries[p] = r
        saved, self.lines = self.lines, []
        try:
            for g in fusion.groups:
                self._group(g)
            results = [self.array(r) for r in fusion.function.results]
            return self.lines, results
        finally:
            self.lines = saved

    # -- groups -------------------------------------------------------------------------------
    def _group(self, g):
        op = g.ops[0]
        if g.kind == "alias":
            for r, v in zip(op.results, op.operands):
                self.names[r] = self.array(v)
        elif g.kind == "control":
            emitters.RULES[op.opdef][1](self, op)
        elif g.kind == "effect":
            raise Unsupported(f"{op.opdef.name} (runs in Python)")
        elif g.kind == "op" and is_movement(g):
            self._movement(op)
        elif g.kind == "op" and op.opdef.category == "linalg":
            raise Unsupported(f"{op.opdef.name} (LAPACK)")
        else:
            self._kernel(g)

    def array_dtype(self, dt) -> str:
        """Arrays here hold the kernels' storage (float16 as its uint16 bits)."""
        return storage_type(dt)

    def loop_buffer(self, shape: tuple, dtype) -> str:
        """A buffer of the driver, allocated once before its loops and rewritten by every
        iteration (control.py copies the carries into buffers of their own)."""
        name = self.new_name("b")
        self.fixed.add(name)
        self.prologue.append(f"{name} = np.empty({tuple(shape)}, {self.array_dtype(dtype)})")
        return name

    def _buffer(self, v) -> str:
        name = self.names[v] = self.loop_buffer(tuple(v.shape), v.type.dtype)
        self.rewritten.add(name)
        return name

    def _kernel(self, g):
        spec = generate_kernel(g, _SERIAL)
        raises = _raises(spec.source)
        if raises:
            spec = dataclasses.replace(spec, source=_returning_codes(spec.source))
        # One compiled callee per source and argument types: a flat kernel's source is the
        # same at every rank, and a callee compiled for 1-d arrays given 0-d ones crashed
        key = (spec.source, tuple((v.type.dtype, len(v.shape))
                                  for v in spec.inputs + spec.outputs + spec.scalars))
        if key not in self._callee_of:
            self._callee_of[key] = len(self.callees)
            self.callees.append(spec)
        j = self._callee_of[key]
        ins = [self.array(v) for v in spec.inputs]
        out = spec.outputs[0]
        if (spec.in_place is not None
                and self.in_place_carries.get(spec.inputs[spec.in_place]) is out):
            # ``x + a @ b`` as the carry x's next value: the carry keeps one buffer, which
            # the kernel updates in place from the second iteration on (the first copies the
            # loop's operand into it); nothing reads x after this kernel
            name = self.names[out] = self.loop_buffer(tuple(out.shape), out.type.dtype)
            self.updated_in_place.add(name)
            outs = [name] + [self._buffer(v) for v in spec.outputs[1:]]
        else:
            outs = [self._buffer(v) for v in spec.outputs]
        scalars = [literal(v) for v in spec.scalars]
        sizes = [f"np.int64({n})" for n in spec.sizes + [0, spec.span]]
        args = ins + outs + scalars + sizes
        call = f"call_address(f{j}, ({', '.join(args)},))"
        if not raises:
            self.lines.append(call)
            return
        # A body kernel that raises (an out-of-bounds traced index) returns its exception's
        # code instead (_returning_codes: Numba's C wrapper returned 0 for an exception, and
        # printed it as ignored), and the driver raises it. Ignored, the loop went on with
        # the kernel's output never written: x[i] past the end read an uninitialized buffer.
        st = self.new_name("st")
        self.lines += [f"{st} = {call}", f"if {st} != 0:"]
        if len(set(raises)) == 1:
            self.lines.append(f"    raise {raises[0][0]}({raises[0][1]!r})")
            return
        for code, (cls, msg) in enumerate(raises, start=1):
            self.lines += [f"    if {st} == {code}:", f"        raise {cls}({msg!r})"]
        self.lines.append(f"    raise RuntimeError({_FAILED!r})")

    def _copy_block(self, out: str, shape: tuple, x: str, part: tuple, axis: int,
                    at: int) -> list:
        """``out[..., at:at + n, ...] = x`` (``n = part[axis]``) as element loops over flat
        views: codegen/direct does not take an array assigned to a slice, so a loop whose body
        stacks (``np.stack([x, 2 * x])``) went to Numba (a nested scan's driver: 5 s)."""
        outer = 1
        for d in shape[:axis]:
            outer *= d
        inner = 1
        for d in shape[axis + 1:]:
            inner *= d
        chunk = part[axis] * inner
        row = shape[axis] * inner
        d, s = self.new_name("d"), self.new_name("s")
        o, i = self.new_name("o"), self.new_name("i")
        return [f"{d} = {out}.reshape({outer * row})", f"{s} = {x}.reshape({outer * chunk})",
                f"for {o} in range({outer}):",
                f"    for {i} in range({chunk}):",
                f"        {d}[{o} * {row} + {at * inner} + {i}] = {s}[{o} * {chunk} + {i}]"]

    def _movement(self, op):
        if op.opdef is ops.concatenate:
            axis = op.attrs["axis"]
            xs = [self.array(v) for v in op.operands]
            out = self._buffer(op.result)
            at = 0
            for x, v in zip(xs, op.operands):
                self.lines += self._copy_block(out, op.result.shape, x, v.shape, axis, at)
                at += v.shape[axis]
        elif op.opdef is ops.pad:
            x, value = op.operands
            a = op.attrs
            src = self.array(x)
            out = self._buffer(op.result)
            if x.type.ndim == 0:
                self.lines += copy_into(self, out, src, ())
                return
            fill = (storage_literal(value.dtype, value.op.attrs["value"][()])
                    if is_scalar_constant(value) else f"{self.array(value)}[()]")
            self.lines.append(f"{out}.fill({fill})")
            inner = ", ".join(f"{lo}:{lo + max(n - 1, 0) * (it + 1) + 1 if n else lo}:{it + 1}"
                              for n, lo, it in zip(x.shape, a["low"], a["interior"]))
            self.lines.append(f"{out}[{inner},] = {src}")
        elif op.opdef is ops.update_slice:
            x, v = op.operands
            out = self._buffer(op.result)
            self.lines += copy_into(self, out, self.array(x), tuple(x.shape))
            src, a = self.array(v), op.attrs
            idx = [self.new_name("i") for _ in v.shape]
            for depth, (i, m) in enumerate(zip(idx, v.shape)):
                self.lines.append(f"{'    ' * depth}for {i} in range({m}):")
            box = ", ".join(f"{s} + {st} * {i}" for s, st, i in zip(a["starts"], a["steps"], idx))
            self.lines.append(f"{'    ' * len(idx)}{out}[{box},] = {src}[{', '.join(idx)},]")
        else:
            raise Unsupported(f"{op.opdef.name} (NumPy's, in the entry)")

    # -- the module ---------------------------------------------------------------------------
    def spec(self) -> KernelSpec:
        op = self.op
        ins = [f"a{i}" for i in range(len(op.operands))]
        for v, name in zip(op.operands, ins):
            self.names[v] = name
        self.fixed.update(ins)
        outs = [f"o{i}" for i in range(len(op.results))]
        emitters.RULES[op.opdef][1](self, op, outs)
        params = ins + [f"a{len(ins) + i}" for i in range(len(self.constants))] + outs
        params += [f"f{j}" for j in range(len(self.callees))]
        driver = [f"@njit({_FLAGS})", f"def kernel({', '.join(params + ['lo', 'hi'])}):"]
        driver += ["    " + line for line in self.prologue + self.lines] + ["    return 0"]
        source = HEADER + _IMPORT + "\n\n" + "\n".join(driver) + "\n"
        return KernelSpec(source, list(op.operands) + self.constants, list(op.results), [],
                          [], False, 0, 0, 1, callees=self.callees,
                          notes=[f"{op.opdef.name}: native loop module, "
                                 f"{len(self.callees)} body kernels called by address"])


def native_loop(op) -> KernelSpec:
    """The KernelSpec of ``op``'s native module, or Unsupported."""
    return NativeLoop(op).spec()
