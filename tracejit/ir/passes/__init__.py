"""Whole-program passes: each takes a Function and gives an equivalent, verifiable Function."""
from .dce import dce

__all__ = ["dce"]
