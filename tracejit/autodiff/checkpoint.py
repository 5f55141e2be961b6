"""``checkpoint(fn)``: trade compute for memory in reverse mode (rematerialization).

Inside a trace, a checkpointed function becomes one ``call`` op holding its traced body. The
forward pass runs the call and keeps only its inputs and outputs; reverse mode (reverse.py)
recomputes the body in the backward pass instead of keeping its intermediates alive. Outside any
trace it simply calls ``fn``. Code generation inlines the call (``ir.passes.inline_calls``).
"""
from __future__ import annotations

import functools

from ..tracer.pytree import flatten
from ..tracer.trace_state import current_trace
from ..tracer.tracer import Tracer
from .build import call_traced


def checkpoint(fn=None, *, name: str | None = None):
    """Usable as ``checkpoint(fn)``, ``@checkpoint`` or ``@checkpoint(name=...)``."""
    if fn is None:
        return lambda f: checkpoint(f, name=name)

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        leaves, _ = flatten((args, kwargs))
        if current_trace() is None and not any(isinstance(x, Tracer) for x in leaves):
            return fn(*args, **kwargs)
        out, _, _ = call_traced(fn, args, kwargs, name or getattr(fn, "__name__", "block"))
        return out

    return wrapped
