"""Activation functions and softmax, with PyTorch's names and arguments."""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .arguments import _error, _float


def relu(input, inplace=False):
    # relu'(0) = 0, as torch.relu and jax.nn.relu (np.maximum's tie rule would give 0.5);
    # NaN stays NaN; the result keeps input's dtype (torch.relu does). One IR op (lax.relu),
    # whose derivative reads the result (remat needs that: ops.relu). inplace=True (a
    # TypeError before) writes the result into the input, as torch's, which code relies on
    # when it drops the result (F.relu(x, inplace=True) as a statement).
    if not hasattr(input, "dtype"):
        input = np.asarray(input, np.float64 if isinstance(input, float) else None)
    out = lax.relu(input)
    if inplace:
        input[...] = out
        return input
    return out


def sigmoid(input):
    return lax.logistic(input)


def tanh(input):
    return np.tanh(input)


def erf(input):
    """The error function (NumPy has none): lax.erf, eagerly and under tracing."""
    return lax.erf(input)


def gelu(input, approximate="none"):
    if approximate == "tanh":
        c = _float(input, math.sqrt(2.0 / math.pi))
        return 0.5 * input * (1.0 + np.tanh(c * (input + 0.044715 * input * input * input)))
    if approximate != "none":
        raise _error(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return 0.5 * input * (1.0 + erf(input * _float(input, 1 / math.sqrt(2.0))))


def _softmax_input(input, dim, dtype):
    """torch's ``dim=None`` (0 for 0-, 1- and 3-D inputs, else 1, as its deprecated legacy
    rule) and ``dtype`` (the input cast to it first: float16 scores in float32)."""
    if dtype is not None:
        input = input.astype(dtype)
    if dim is None:
        dim = 0 if np.ndim(input) in (0, 1, 3) else 1
    return input, dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    input, dim = _softmax_input(input, dim, dtype)
    e = np.exp(input - input.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    input, dim = _softmax_input(input, dim, dtype)
    shifted = input - input.max(axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
