"""One cache entry of a jitted function: the trace and the program running it, and the
results given back in the shape the user's function returned them."""
from __future__ import annotations

from ..tracer.pytree import unflatten
from ..tracer.trace_function import Traced


class CompiledEntry:
    """One cache entry: the trace, and the program that runs it."""

    def __init__(self, traced: Traced, program):
        self.traced = traced
        self.program = program
        # An Executable's own ``run``: one call less on every call of the entry.
        self._run = getattr(program, "run", program)
        self._out_tree = traced.out_tree
        self._repeats = list(traced.repeats.items())
        self._scalar = [r.type.shape == () for r in traced.function.results]
        # One array result (the common case): skip the pytree rebuild on every call.
        self._single = traced.out_tree.kind == "leaf" and not self._scalar[0]
        self._guarded_of = self._guarded = None

    @property
    def guarded(self):
        """The fastest call, for JittedFunction's last-used entry: no Python-side checks; it
        raises TypeError or ArgumentMismatch when the arguments do not fit (see plan.py).
        None while a tiered program still runs on NumPy."""
        guarded = getattr(self.program, "guarded", None)
        if guarded is not self._guarded_of:
            self._guarded_of = guarded
            if guarded is None:
                self._guarded = None
            elif self._single:
                self._guarded = lambda args: guarded(args)[0]
            else:
                self._guarded = lambda args: self._rebuild(guarded(args))
        return self._guarded

    def __call__(self, leaves):
        outs = self._run(leaves)
        if self._single:
            return outs[0]
        return self._rebuild(outs)

    def _rebuild(self, outs):
        outs = [o[()] if s else o for o, s in zip(outs, self._scalar)]
        for i, j in self._repeats:
            outs[i] = outs[j]
        return unflatten(self._out_tree, outs)
