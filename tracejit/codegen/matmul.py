"""The product of a matmul kernel: BLAS on a block of rows or columns, its epilogue on the
same block, and integer or batched products as loops. A mixin of kernel.LoopKernel.

float16 operands (uint16 bits in kernels) are converted to float32 (half.h2f_matrix: a
block's rows or columns, and the whole other operand, per call) for BLAS's sgemm, into a
float32 product buffer; the epilogue reads it rounded to float16 and stores float16. The
sums are float32 ones, rounded once: NumPy's own float16 matmul (no BLAS) rounds each
multiply-add to float16, so the two agree within a tolerance scaled by float16's ulp and the
length of the sums, not bit for bit."""
from __future__ import annotations

from ..ir import ops
from . import emitters
from .representation import contiguous_as_float32, held, matrix_as_float32, scalar_type

MATMUL_WORK = 64      # multiply-adds of a matmul that count as one element of loop work
MATMUL_ROWS = 16      # fewest rows (or columns) of a matmul's output per thread


class MatmulKernel:
    def uses(self, v, mv) -> bool:
        """Whether the group computes ``v`` from ``mv`` (or ``v`` is ``mv``)."""
        stack, seen = [v], set()
        while stack:
            u = stack.pop()
            if u is mv:
                return True
            op = self.defined.get(u)
            if op is not None and id(u) not in seen:
                seen.add(id(u))
                stack.extend(op.operands)
        return False

    def operand(self, v) -> str:
        """A matmul operand: an input array, or a view of one (its group's operand ops)."""
        op = self.defined.get(v)
        if op is None:
            return self.array(v)
        base = self.operand(op.operands[0])
        if op.opdef is ops.transpose:
            return f"{base}.T"
        dims = ", ".join(self.size((id(op), "o", k), n) for k, n in enumerate(op.attrs["shape"]))
        return f"{base}.reshape(({dims},))"

    def added_to(self, onames) -> tuple | None:
        """(x's name, the output's name) when the whole group is ``x + a @ b`` (either order)
        of one float type, written to its only output, ``x`` an input read nowhere else: BLAS
        adds the product to a copy of ``x`` (``gemm(..., 1)``; or to ``x`` itself, given as the output: a
        gradient a loop accumulates, loops.py) instead of an epilogue reading both."""
        head, g = self.g.head, self.g
        mv = head.result
        rest = [op for op in g.ops if op is not head
                and not any(self.uses(v, op.result) for v in head.operands)]
        if len(rest) != 1 or rest[0].opdef is not ops.add or g.outputs != [rest[0].result]:
            return None
        add = rest[0]
        others = [v for v in add.operands if v is not mv]
        if len(others) != 1 or len(add.operands) != 2:
            return None
        x = others[0]
        if (x in self.defined or x.type != mv.type or add.result.type != mv.type
                or any(self.uses(v, x) for v in head.operands)):
            return None
        name = self.array(x)
        self.in_place = self.inputs.index(x)
        return name, onames[add.result]

    def parallel_gemm(self, m: str, n: str, by_rows: bool, epilogue, half=False,
                      onames=None) -> list[str]:
        """The GEMM of a 2-D float matmul group on the block ``lo:hi`` of its rows (of its
        columns when the product is wider than tall, ``by_rows`` False; blas.gemm takes such
        views without copies) and, when ``epilogue`` (the elementwise loop body over ``i0,
        i1``) is given, the epilogue on that block at once, while it is in cache. One call with
        the whole range computes everything. The direction is fixed when the plan is built, so
        the kernel compiles one GEMM call and one epilogue loop, not two of each. ``half``:
        the dtype of float16 or bfloat16 operands, converted to float32 here (the block's part
        of one, all of the other), else None."""

        def c(x):
            return matrix_as_float32(half, x) if half else x
        if by_rows:
            rows, cols = "range(lo, hi)", f"range({n})"
            operands = f"{c('A[lo:hi]')}, {c('B')}, mm[lo:hi]"
        else:
            rows, cols = f"range({m})", "range(lo, hi)"
            operands = f"{c('A')}, {c('B[:, lo:hi]')}, mm[:, lo:hi]"
        added = self.added_to(onames) if epilogue and not half else None
        if added:
            x, out = added
            return [f"if not same_data({x}, {out}):",
                    f"    for i0 in {rows}:", f"        for i1 in {cols}:",
                    f"            mm[i0, i1] = {x}[i0, i1]",
                    f"gemm({operands}, 1)"]
        lines = [f"gemm({operands}, 0)"]
        if epilogue:
            lines += [f"for i0 in {rows}:", f"    for i1 in {cols}:"]
            lines += [f"        {e}" for e in epilogue]
        return lines

    def matmul_prelude(self, onames, epilogue=None) -> list[str]:
        head = self.g.head
        a, b = (self.operand(v) for v in head.operands)
        mv = head.result
        # The product goes into its own output, or into an epilogue output computed from it:
        # never into an output of the group's operand ops (a reshaped operand that is also a
        # result has the product's shape too; the product written there was overwritten).
        half = mv.dtype if held(mv.dtype) is not None else None
        target = None if half else next(
            (onames[v] for v in self.g.outputs
             if v.dtype == mv.dtype and v.shape == mv.shape and self.uses(v, mv)), None)
        rank = mv.type.ndim
        dims = ", ".join(self.size(("F", d), mv.shape[d]) for d in range(rank))
        lines = [f"mm = {target}" if target else
                 f"mm = np.empty(({dims},), {scalar_type(mv.dtype)})"]
        kdim = self.size(("K",), head.operands[0].shape[-1])
        m, n = (self.size(("F", rank - 2), mv.shape[-2]), self.size(("F", rank - 1), mv.shape[-1]))
        if rank == 2:
            # A and B may be F-contiguous (transposed views): BLAS reads them with its
            # transpose flags, no copy.
            lines += [f"A = {a}", f"B = {b}"]
            if mv.dtype.is_float:
                by_rows = mv.shape[-2] >= mv.shape[-1]
                self.span = mv.shape[-2] if by_rows else mv.shape[-1]
                self.splittable, self.min_block = True, MATMUL_ROWS
                return lines + self.parallel_gemm(m, n, by_rows, epilogue, half, onames)
            return lines + [f"for i in range({m}):",
                            f"    for j in range({n}):",
                            "        mm[i, j] = 0",
                            f"    for kk in range({kdim}):",
                            "        x = A[i, kk]",
                            f"        for j in range({n}):",
                            "            mm[i, j] += x * B[kk, j]"]
        batch = "1"
        for d in range(rank - 2):
            batch = f"{batch} * {self.size(('F', d), mv.shape[d])}"

        def c(x):
            x = f"np.ascontiguousarray({x})"
            return contiguous_as_float32(half, x) if half else x
        lines += [f"A = {c(a)}.reshape(({batch}, {m}, {kdim}))",
                  f"B = {c(b)}.reshape(({batch}, {kdim}, {n}))",
                  f"M = mm.reshape(({batch}, {m}, {n}))"]
        if mv.dtype.is_float:
            lines += [f"for q in range({batch}):", "    gemm(A[q], B[q], M[q], 0)"]
        else:
            lines += [f"for q in range({batch}):",
                      f"    for i in range({m}):",
                      f"        for j in range({n}):",
                      "            M[q, i, j] = 0",
                      f"        for kk in range({kdim}):",
                      "            x = A[q, i, kk]",
                      f"            for j in range({n}):",
                      "                M[q, i, j] += x * B[q, kk, j]"]
        return lines


emitters.register("matmul", ops.matmul)(MatmulKernel.matmul_prelude)
