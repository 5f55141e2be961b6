"""Whole-program passes: each takes a Function and gives an equivalent, verifiable Function."""
from .dce import dce
from .inline import inline_calls

__all__ = ["dce", "inline_calls"]
