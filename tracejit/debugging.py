"""``tracejit.debug_print(fmt, *values)``: print run-time values from inside compiled code.

Inside a trace it records a ``debug_print`` op (a side effect, kept by every pass), which the
compiled program runs with the actual arrays; outside a trace it prints at once. ``fmt`` uses
``str.format`` fields: ``debug_print("loss {} at step {}", loss, step)``.
"""
from __future__ import annotations

from .ir import ops
from .tracer.tracer import Tracer


def debug_print(fmt: str, *values) -> None:
    tracers = [v for v in values if isinstance(v, Tracer)]
    if not tracers:
        print(fmt.format(*values))
        return
    from .tracer.numpy.lifting import lift_all
    lifted = lift_all(*values)
    trace = lifted[0]._trace
    trace.emit(ops.debug_print, [t._value for t in lifted], fmt=str(fmt))
