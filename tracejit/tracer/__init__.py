"""Tracing: Python functions on Tracer values become IR Functions."""
from .errors import (ConcretizationError, ConcretizationTypeError, EscapedTracerError, TracerError,
                     UnsupportedError)
from .pytree import flatten, register_pytree_node, tree_map, unflatten
from .tracer import Tracer, use_numpy_layer
from .numpy.dispatch import TRACER_METHODS
from .trace_function import inline, trace
from .control_flow import cond, fori_loop, scan, switch, while_loop

use_numpy_layer(TRACER_METHODS)   # Tracer's operators and methods, from the NumPy layer

__all__ = ["ConcretizationError", "ConcretizationTypeError", "EscapedTracerError", "TracerError", "UnsupportedError",
           "flatten", "register_pytree_node", "tree_map", "unflatten", "Tracer", "inline", "trace",
           "cond", "switch", "while_loop", "fori_loop", "scan"]
