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

__all__ = [
    "dtypes", "ops", "DType", "as_dtype", "Builder", "Function", "Op", "Value", "interpret",
    "ParseError", "parse", "print_function", "OPS", "IRTypeError", "OpDef", "lookup",
    "TensorType", "broadcast_shapes", "VerificationError", "verify",
]
