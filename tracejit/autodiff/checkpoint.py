"""``checkpoint(fn)``: trade compute for memory in reverse mode (rematerialization).

Inside a trace, a checkpointed function becomes one ``call`` op holding its traced body. The
forward pass runs the call and keeps only its inputs and outputs; reverse mode (reverse.py)
recomputes the body in the backward pass instead of keeping its intermediates alive. Outside any
trace it simply calls ``fn``. Code generation inlines the call (``ir.passes.inline_calls``).

The body is traced at each call, with the functions among the arguments, and the Python and
NumPy scalars Python code needs the values of, as their values (build.trace_static_as_needed):
what JAX's ``static_argnums`` does, without naming them, so
``checkpoint(block)(x, n_layers, np.tanh)`` loops ``range(n_layers)``.
"""
from __future__ import annotations

import functools

from ..tracer.pytree import flatten
from ..tracer.trace_state import current_trace
from ..tracer.tracer import Tracer
from .build import call_traced, trace_static_as_needed


def checkpoint(fn=None, *, name: str | None = None):
    """Usable as ``checkpoint(fn)``, ``@checkpoint`` or ``@checkpoint(name=...)``."""
    if fn is None:
        return lambda f: checkpoint(f, name=name)

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        leaves, _ = flatten((args, kwargs))
        if current_trace() is None and not any(isinstance(x, Tracer) for x in leaves):
            return fn(*args, **kwargs)
        # functions among the arguments, and numbers Python code needs the value of
        # (checkpoint(block)(x, n_layers, act)), fixed for this call's trace as JAX's
        # static_argnums would fix them
        (out, _, _), _, _ = trace_static_as_needed(
            lambda a, k: call_traced(fn, a, k, name or getattr(fn, "__name__", "block")),
            args, kwargs)
        return out

    return wrapped
