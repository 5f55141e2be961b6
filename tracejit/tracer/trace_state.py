"""The state of a trace in progress (``Trace``: the IR builder that operations on Tracers append
to, and the outer tracers it captured) and the per-thread stack of active traces.

Traces nest (``grad`` inside ``jit``). A tracer of an enclosing trace used inside an inner trace
is *captured*: it becomes an extra parameter of the inner Function and is bound back to the outer
tracer when the inner Function is inlined. A tracer whose trace has ended is an error.
"""
from __future__ import annotations

import threading

from ..ir import Builder, Function, Value
from .errors import EscapedTracerError, user_location


class _Stack(threading.local):
    def __init__(self):
        self.traces: list["Trace"] = []


_stack = _Stack()


class Trace:
    def __init__(self, name: str):
        self.builder = Builder(name)
        self.active = False
        self.level = -1
        # Captured outer tracers, in order, and their parameter in this trace.
        self.captured: list = []
        self._capture_param: dict[int, Value] = {}
        # Whether a view-or-copy decision read an argument's memory layout (views.py)
        self.read_layout = False
        # Python-int parameters converted to a narrower integer dtype: value -> [(dtype,
        # where)]; the caller checks each argument's value fits (NumPy raises OverflowError)
        self.int_casts: dict = {}
        # 0-d parameters: whether each stands for a NumPy scalar (np.float64(0.1)), immutable
        # as eagerly (``s += 1`` rebinds the name), or for a 0-d array, written in place. Both
        # share a cache key; a trace in which that made a difference holds for the kinds it
        # was traced with only, of those parameters (``scalar_kinds_read``: their values)
        self.zero_d: dict = {}
        self.scalar_kinds_read: set = set()
        # id -> weakref of tracers made as 0-d arrays (np.zeros(()), np.array(v), x.copy()):
        # eagerly arrays, not NumPy scalars, so ``z += 1`` writes into them (views.py)
        self.arrays_0d: dict = {}
        # id of an argument's tracer -> where the function first wrote into it (for errors)
        self.written_at: dict = {}
        # A top-level trace's ExternalArrays: the arrays read from outside the function that
        # become its parameters (external_arrays.py), or None
        self.external = None
        # Whether ops of an enclosing trace's values made while this trace is active are
        # recorded here (captured), not in their own trace: a cond branch, whose ops must not
        # run outside it (recording())
        self.holds_ops = False
        # ids of this trace's tracers that are model state (an nn.Module's buffers:
        # pytree.state_leaves of its arguments, and those read from outside), which a grad
        # traced inside may write into (``outer_state_writes``)
        self.state: set = set()
        # In a trace whose writes into an enclosing trace's model state are handed back (grad's:
        # a BatchNorm the differentiated function closes over): id(outer tracer) -> (it, its
        # new value here); None where such a write is refused
        self.outer_state_writes: dict | None = None

    def __enter__(self) -> "Trace":
        self.level = len(_stack.traces)
        _stack.traces.append(self)
        self.active = True
        return self

    def __exit__(self, *exc):
        assert _stack.traces and _stack.traces[-1] is self
        _stack.traces.pop()
        self.active = False
        return False

    def emit(self, opdef, operands: list[Value], **attrs):
        loc = user_location()
        return self.builder.emit(opdef, operands, loc=loc.short if loc else None, **attrs)

    def capture(self, tracer) -> Value:
        """The parameter standing for an outer trace's tracer inside this trace."""
        key = id(tracer)
        if key not in self._capture_param:
            name = f"captured{len(self.captured)}"
            self._capture_param[key] = self.builder.param(tracer._value.type, name)
            self.captured.append(tracer)
        return self._capture_param[key]

    def finish(self, results: list[Value]) -> Function:
        return self.builder.build(results)


def current_trace() -> Trace | None:
    return _stack.traces[-1] if _stack.traces else None


def written_state(tracer, trace: Trace):
    """The value an enclosing trace's state ``tracer`` holds in ``trace`` after a write into it
    by an inner trace between them (``Trace.outer_state_writes``), or None."""
    for t in reversed(_stack.traces):
        if t.level <= tracer._trace.level:
            return None
        writes = t.outer_state_writes
        if writes and id(tracer) in writes and t.level <= trace.level:
            return writes[id(tracer)][1]
    return None


def recording(trace: Trace) -> Trace:
    """The trace an op of ``trace``'s values goes to: ``trace`` itself, or the innermost active
    trace deeper than it that holds its ops (a cond branch, control_flow.py), which captures
    them. Otherwise ``np.log(y)`` of a closed-over ``y`` in ``cond(y > 0, lambda: np.log(y),
    ...)`` ran outside the cond, also when its branch was not taken, and its derivative there
    (a zero cotangent times 1/y) made a gradient NaN at y = 0."""
    for t in reversed(_stack.traces):
        if t.level <= trace.level:
            break
        if t.holds_ops:
            return t
    return trace


def outside_array(array):
    """The tracer standing for ``array`` if the outermost active trace reads it from outside
    the function at every call (external_arrays.py: ``cfg.scale``, ``layers[0]``), else None
    (it is a constant)."""
    if not _stack.traces:
        return None
    external = _stack.traces[0].external
    if external is None:
        return None
    found = external.found(array)
    if found is None and array.base is not None:
        found = external.view_of(array)       # (layer.W.T, cfg.table[:, 0])
    return found


def read_from_outside(array) -> bool:
    """Whether the outermost active trace reached ``array`` from outside the function (a
    closure model's buffer), lifted (``outside_array``) or left a constant."""
    external = _stack.traces[0].external if _stack.traces else None
    return external is not None and external.reaches(array)


def check_alive(tracer) -> None:
    if not tracer._trace.active:
        loc = user_location()
        created = tracer._loc.describe() if tracer._loc else "an unknown place"
        used = loc.describe() if loc else "an unknown place"
        raise EscapedTracerError(
            "tracejit: a traced value was used after the trace that created it had finished "
            "(an escaped tracer).\n"
            f"  created at {created}\n"
            f"  used at {used}\n"
            "This happens when a value computed inside a jitted or differentiated function is "
            "stored in a global, an attribute or a closure and used later. What to do: return "
            "the value from the function instead of storing it.")
