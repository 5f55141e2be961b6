"""The reference interpreter: runs a Function on NumPy arrays, op by op.

This defines what a program means. Every pass, transform and backend is tested against it.
"""
from __future__ import annotations

import numpy as np

from .graph import Function


def interpret(fn: Function, args: list, on_result=None) -> list[np.ndarray]:
    """Run ``fn`` on ``args``. ``on_result(op, array) -> array``, if given, may replace each
    op's result before later ops read it (the tests use it to estimate a program's
    sensitivity to rounding)."""
    if len(args) != len(fn.params):
        raise TypeError(f"@{fn.name} takes {len(fn.params)} arguments, got {len(args)}")
    env = {}
    for p, a in zip(fn.params, args):
        a = np.asarray(a)
        if a.shape != p.type.shape or a.dtype != p.type.dtype.np:
            raise TypeError(f"argument {p.name or p.id} must be {p.type}, got "
                            f"{a.dtype}{list(a.shape)}")
        env[p] = a
    for op in fn.ops:
        args = [env[v] for v in op.operands]
        # IEEE semantics: nan/inf results (and integer wrap-around) are values, not warnings.
        with np.errstate(all="ignore"):
            if op.regions:
                out = op.opdef.impl(*args, regions=op.regions, **op.attrs)
            else:
                out = op.opdef.impl(*args, **op.attrs)
        outs = out if isinstance(out, list) else [out]
        if len(outs) != len(op.results):
            raise RuntimeError(f"{op.name} computed {len(outs)} results for "
                               f"{len(op.results)} values")
        for r, o in zip(op.results, outs):
            o = np.asarray(o)
            if o.dtype != r.type.dtype.np:
                o = o.astype(r.type.dtype.np)
            assert o.shape == r.type.shape, (op, o.shape)
            env[r] = o if on_result is None else on_result(op, o)
    return [env[r] for r in fn.results]
