"""Optimizers with functional updates (parameters and state in, new ones out)."""
from .optimizers import SGD, Adam, AdamW

__all__ = ["SGD", "Adam", "AdamW"]
