"""A kernel module's source: the header every kernel imports, the ``nogil`` function around a
body, and ``KernelSpec``, how the plan calls it. Shared by kernel.py (fused loop kernels) and
templates.py (ops with their own loop structure)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

HEADER = """import math
import numpy as np
from numba import njit
from tracejit.codegen.mathlib import exp32, exp64, tanh32, logistic32, fmaximum, fminimum, radd
from tracejit.codegen.half_accurate import tanh16, exp16
from tracejit.codegen.mathlib import reciprocal_parts, divide_by_parts, gammaln64, digamma64
from tracejit.codegen.mathlib import sin32, cos32, log32, log1p32, arctan32, arctan2_32, log64
from tracejit.codegen.runtime import ifloordiv, iremainder, ipow, f2i32, f2i64
from tracejit.codegen.runtime import ifmod, logaddexp32, logaddexp64, f2u64, wadd, wsub, wmul
from tracejit.codegen.half import h2f, f2h, round16, round16_64, h2f_matrix, h2f_contiguous
from tracejit.codegen.half import h2f_sw, f2h_sw, round16_sw, round16_64_sw
from tracejit.codegen.bfloat16 import b2f, f2b, round_bf16, round_bf16_64, b2f_matrix
from tracejit.codegen.bfloat16 import b2f_contiguous
from tracejit.codegen.blas import gemm
from tracejit.codegen.native import same_data
"""


@dataclass
class KernelSpec:
    """A kernel's source and how to call it: which values and sizes go in, in order."""
    source: str
    inputs: list            # Values passed as arrays a*
    outputs: list           # Values written o*
    scalars: list           # scalar constant Values passed by value c*
    sizes: list             # ints passed as s*
    parallel: bool          # large enough, and splittable, to run in blocks on threads
    work: int = 0           # elements in the iteration space (for the parallel threshold)
    span: int = 0           # the size of the dim that ``lo, hi`` index: one call is 0, span
    min_block: int = 1      # fewest elements of that dim per thread
    notes: list = field(default_factory=list)
    # KernelSpecs of kernels this one calls by the address of their C wrapper (a native
    # loop's body kernels, loops.py): compiled as kernels of their own, their addresses
    # passed as int64 arguments after the scalars
    callees: list = field(default_factory=list)
    # the index of the input that output o0 may be (the same memory): a matmul adding its
    # product to that input updates it in place then (matmul.py); a native loop gives it a
    # carry's own buffer (loops.py)
    in_place: int | None = None


class KernelNames:
    """The names a kernel generator gives what it reads: arrays ``a*``, scalar constants
    ``c*``, sizes ``s*`` (each once) and temporaries; the CPU's LoopKernel and the CUDA
    generator share it, and the layout ops' index rules (kernel.py) use it through them."""

    def __init__(self):
        self.inputs, self.scalars, self.sizes = [], [], []
        self._size_keys: dict = {}
        self._names: dict = {}
        self.n = 0

    def tmp(self, prefix="t") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def size(self, key, n: int) -> str:
        if key not in self._size_keys:
            self._size_keys[key] = f"s{len(self.sizes)}"
            self.sizes.append(int(n))
        return self._size_keys[key]

    def array(self, v) -> str:
        if v not in self._names:
            self._names[v] = f"a{len(self.inputs)}"
            self.inputs.append(v)
        return self._names[v]

    def scalar(self, v) -> str:
        if v not in self._names:
            self._names[v] = f"c{len(self.scalars)}"
            self.scalars.append(v)
        return self._names[v]


def function_source(params: list[str], body: list[str]) -> str:
    """The kernel module: one ``nogil`` function over the block ``lo:hi`` (threads run blocks
    of one call at once)."""
    sig = ", ".join(params + ["lo", "hi"])
    # No fast-math flags, not even ``contract``: NumPy rounds every op, and an fma that skips
    # one rounding turns cancellations into noise (``exp(z - z.max())`` with z = a * b was
    # 1.001 at the max, not 1: fma(a, b, -max); a float16 chain fused round16(a * b) + c into
    # a half fma). mathlib's helpers keep their own ``contract`` (direct/lower._fastmath_of).
    flags = 'cache=True, nogil=True, error_model="numpy", fastmath=False'
    lines = [HEADER, f"\n@njit({flags})\ndef kernel({sig}):"]
    lines += ["    " + b for b in body or ["pass"]]
    lines.append("    return 0")
    return _BLOCK_LOOP.sub(_block_loop, "\n".join(lines)) + "\n"


# ``for i in range(lo, hi)`` counts from 0 instead: LLVM cannot tell that an index starting at
# ``lo`` is never negative, so Numba's wrap-around of negative indices stays in the loop and a
# 1-D loop is not vectorized (x * c at 5e5 float32: 0.60 ms, NumPy 0.10 ms); counted from 0
# plus max(lo, 0) it is (0.09 ms). Block bounds are never negative: the same indices.
_BLOCK_LOOP = re.compile(r"^( *)for (\w+) in range\(lo, hi\):$", re.M)


def _block_loop(m) -> str:
    pad, i = m.group(1), m.group(2)
    return f"{pad}for {i}_ in range(hi - lo):\n{pad}    {i} = {i}_ + max(lo, 0)"
