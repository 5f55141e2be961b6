"""What a backend gives back for a Function: a program, ``program(leaves) -> list of
arrays``, with what ``jit(f).lower`` and jit's fast path read from it.

Every program has ``function`` (the traced IR) and ``guarded`` (the unchecked call jit's
fast path keeps, or None). The compiled one also has ``optimized`` (the IR after the passes,
with its fusion groups) and ``source`` (every kernel's and the entry's source).
"""
from __future__ import annotations

import numpy as np

from ..ir import Function, interpret


class Executable:
    """A compiled program (codegen's ``Program``) with the IR it was built from."""

    def __init__(self, function: Function, program, optimized: str):
        self.function = function
        self.program = program          # codegen.Program: its plan, entry and buffers
        self.run = program.run          # checks and converts the leaves, then the entry
        self.guarded = program.guarded  # the entry alone (see codegen/program.py)
        self.optimized = optimized
        self.source = program.sources

    def __call__(self, leaves):
        return self.run(leaves)

    def wait(self):
        """Wait for the work a compiled program still does in the background (its parallel
        kernels' native hand-off); returns self."""
        self.program.wait_handoff()
        return self


class Interpreted:
    """The reference interpreter as a program (``backend="interpreter"``)."""

    guarded = None

    def __init__(self, function: Function):
        self.function = function
        self._dtypes = [p.type.dtype.np for p in function.params]

    def __call__(self, leaves):
        args = [np.asarray(x, dtype=d) for x, d in zip(leaves, self._dtypes)]
        outs = interpret(self.function, args)
        # Results are fresh arrays, as from the compiled program: NumPy's views of an
        # argument (reshape, x.T) or one array returned twice are copied.
        for i, o in enumerate(outs):
            if any(np.may_share_memory(o, other) for other in args + outs[:i]):
                outs[i] = o.copy()
        return outs
