"""The typed SSA IR: types, ops, Functions, verifier, printer, parser and interpreter."""
from . import dtypes, ops
from .dtypes import DType, as_dtype
from .graph import Builder, Function, Op, Value
from .interpreter import interpret
from .parser import ParseError, parse
from .printer import print_function
from .registry import OPS, IRTypeError, OpDef, lookup
from .types import TensorType, broadcast_shapes
from .verifier import VerificationError, verify


def _run(self, *args):
    """Run on NumPy arrays with the reference interpreter; returns a list of arrays."""
    return interpret(self, list(args))


# A Function's text form and its semantics live in printer.py and interpreter.py, which build
# on graph.py: attached here, so that graph.py imports neither (no import cycle).
Function.__str__ = print_function
Function.__call__ = _run

__all__ = [
    "dtypes", "ops", "DType", "as_dtype", "Builder", "Function", "Op", "Value", "interpret",
    "ParseError", "parse", "print_function", "OPS", "IRTypeError", "OpDef", "lookup",
    "TensorType", "broadcast_shapes", "VerificationError", "verify",
]
