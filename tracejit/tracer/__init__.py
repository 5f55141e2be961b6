"""Tracing: Python functions on Tracer values become IR Functions."""
from .errors import (ConcretizationError, ConcretizationTypeError, EscapedTracerError, TracerError,
                     UnsupportedError)
from .jit import JittedFunction, RetraceWarning, jit, make_ir
from .pytree import flatten, register_pytree_node, tree_map, unflatten
from .tracer import Tracer
from .tracing import inline, trace

__all__ = ["ConcretizationError", "ConcretizationTypeError", "EscapedTracerError", "TracerError", "UnsupportedError",
           "JittedFunction", "RetraceWarning", "jit", "make_ir", "flatten",
           "register_pytree_node", "tree_map", "unflatten", "Tracer", "inline", "trace"]
