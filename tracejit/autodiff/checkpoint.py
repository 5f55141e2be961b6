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

from ..tracer.pytree import flatten, state_leaves, unflatten
from ..tracer.trace_state import current_trace
from ..tracer.tracer import Tracer
from .build import emit_call, trace_static_as_needed


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
        out, _, _ = trace_static_as_needed(
            lambda a, k: _call_traced(fn, a, k, name or getattr(fn, "__name__", "block")),
            args, kwargs)
        return out

    return wrapped


def _call_traced(fn, args, kwargs, name):
    """build.call_traced, letting ``fn`` write into a model's state (BatchNorm's running
    statistics, pytree.state_leaves) as grad does: a checkpointed block of a model in
    training mode was refused ("writes into its argument ... under a transform"). The new
    values are results of the call, written once (recomputing the body for the backward pass
    writes nothing again; torch's checkpoint updates the statistics twice)."""
    from ..tracer.trace_function import trace
    from .api import write_state_back
    leaves, _ = flatten((args, kwargs))
    t = trace(fn, args, kwargs, name, writable=frozenset(state_leaves((args, kwargs))),
              state_writes=True)
    outs = emit_call(t.function, leaves + list(t.captured))
    write_state_back(t, [leaves[j] for j in t.written], outs[t.n_results:])
    return unflatten(t.out_tree, outs[:t.n_results])
