"""Liveness: how many bytes are alive while a Function runs op by op in program order.

A value is alive from its definition (parameters: from the start) to its last use; results stay
alive to the end. ``call`` ops are inlined first, since that is what code generation runs.
A control-flow op (cond, while_loop, scan) counts as its operands and results: what its
bodies make inside while it runs is not counted. This
is an analysis, not a transform: it reports the peak, where it happens, and what is held across
a given point (used to show what checkpointing saves between the forward and backward passes).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..graph import Function, Value
from .inline import inline_calls


def nbytes(v: Value) -> int:
    return v.type.size * v.type.dtype.np.itemsize


@dataclass
class Liveness:
    fn: Function                  # the inlined Function analysed
    born: dict                    # Value -> index of the op defining it (-1 for parameters)
    dies: dict                    # Value -> index of its last use (len(ops) for results)
    live_bytes: list[int]         # bytes alive while op i runs (operands and results)

    @property
    def peak_bytes(self) -> int:
        return max(self.live_bytes, default=sum(nbytes(p) for p in self.fn.params))

    @property
    def peak_index(self) -> int:
        return max(range(len(self.live_bytes)), key=self.live_bytes.__getitem__, default=-1)

    def held_across(self, index: int, include_params: bool = True) -> int:
        """Bytes of values defined before op ``index`` and used at or after it."""
        return sum(nbytes(v) for v, b in self.born.items()
                   if b < index <= self.dies[v] and (include_params or b >= 0))


def liveness(fn: Function) -> Liveness:
    fn = inline_calls(fn)
    n = len(fn.ops)
    born = {p: -1 for p in fn.params}
    dies = {p: -1 for p in fn.params}
    for i, op in enumerate(fn.ops):
        for v in op.operands:
            dies[v] = i
        for r in op.results:
            born[r] = dies[r] = i
    for r in fn.results:
        dies[r] = n
    # Shift indices by one so that parameters (born at -1) sit at 0; difference array.
    delta = [0] * (n + 3)
    for v, b in born.items():
        delta[b + 1] += nbytes(v)
        delta[dies[v] + 2] -= nbytes(v)
    live, total = [], delta[0]
    for i in range(n):
        total += delta[i + 1]
        live.append(total)
    return Liveness(fn, born, dies, live)
