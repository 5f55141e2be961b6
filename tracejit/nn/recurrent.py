"""Recurrent cells with PyTorch's formulas, parameter names, shapes and initialisation:
RNNCell, GRUCell and LSTMCell (one time step; a loop over time is the caller's, as in torch,
or ``tracejit.scan`` under jit)."""
from __future__ import annotations

import math

import numpy as np

from .activations import relu, sigmoid
from .arguments import _error
from .functional import linear
from .layers import _uniform
from .module import Module


class _Cell(Module):
    """weight_ih (gates * hidden, input), weight_hh (gates * hidden, hidden), bias_ih and
    bias_hh (gates * hidden), all drawn from U(-1/sqrt(hidden), 1/sqrt(hidden)) as torch's."""
    _gates = 1

    def __init__(self, input_size, hidden_size, bias=True, *, rng=None, dtype=np.float32):
        rng = rng if rng is not None else np.random.default_rng()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        k = 1.0 / math.sqrt(hidden_size) if hidden_size else 0.0
        rows = self._gates * hidden_size
        self.weight_ih = _uniform(rng, k, (rows, input_size), dtype)
        self.weight_hh = _uniform(rng, k, (rows, hidden_size), dtype)
        self.bias_ih = _uniform(rng, k, (rows,), dtype) if bias else None
        self.bias_hh = _uniform(rng, k, (rows,), dtype) if bias else None

    def _inputs(self, input, hx):
        """torch's checks; the batched input, the states (zeros when not given) and whether
        the input was one unbatched sample."""
        name = type(self).__name__
        if np.ndim(input) not in (1, 2):
            raise _error(f"{name}: Expected input to be 1D or 2D, got {np.ndim(input)}D input "
                         "instead", "pass (batch, input_size) or one (input_size,) sample")
        if input.shape[-1] != self.input_size:
            raise _error(f"{name}: input has inconsistent input_size: got {input.shape[-1]} "
                         f"expected {self.input_size}")
        one = input.ndim == 1
        x = input[None] if one else input
        states = hx if isinstance(hx, tuple) else (hx,)
        out = []
        for h in states:
            if h is None:
                h = np.zeros((x.shape[0], self.hidden_size), x.dtype)
            else:
                if np.ndim(h) != input.ndim:
                    raise _error(f"{name}: Expected hidden to be {input.ndim}D for "
                                 f"{input.ndim}D input, got {np.ndim(h)}D hidden")
                h = h[None] if one else h
                if h.shape != (x.shape[0], self.hidden_size):
                    raise _error(f"{name}: Input batch size {x.shape[0]} doesn't match hidden "
                                 f"batch size {h.shape[0]}" if h.shape[0] != x.shape[0] else
                                 f"{name}: hidden has inconsistent hidden_size: got "
                                 f"{h.shape[1]}, expected {self.hidden_size}")
            out.append(h)
        return x, out, one

    def _gates_of(self, x, h):
        return linear(x, self.weight_ih, self.bias_ih), linear(h, self.weight_hh, self.bias_hh)


class RNNCell(_Cell):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (``nonlinearity='relu'``: relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", *, rng=None,
                 dtype=np.float32):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, rng=rng, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), one = self._inputs(input, hx)
        gi, gh = self._gates_of(x, h)
        out = np.tanh(gi + gh) if self.nonlinearity == "tanh" else relu(gi + gh)
        return out[0] if one else out


class GRUCell(_Cell):
    """torch's GRU step, gates (r, z, n) stacked in that order:
    r = σ(W_ir x + b_ir + W_hr h + b_hr), z likewise, n = tanh(W_in x + b_in + r (W_hn h +
    b_hn)), h' = (1 - z) n + z h."""
    _gates = 3

    def forward(self, input, hx=None):
        x, (h,), one = self._inputs(input, hx)
        gi, gh = self._gates_of(x, h)
        i_r, i_z, i_n = np.split(gi, 3, axis=1)
        h_r, h_z, h_n = np.split(gh, 3, axis=1)
        r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
        n = np.tanh(i_n + r * h_n)
        out = (np.asarray(1, n.dtype) - z) * n + z * h
        return out[0] if one else out


class LSTMCell(_Cell):
    """torch's LSTM step, gates (i, f, g, o) stacked in that order: c' = f c + i g,
    h' = o tanh(c'); ``hx`` is the pair (h, c), and so is the result."""
    _gates = 4

    def forward(self, input, hx=None):
        x, (h, c), one = self._inputs(input, (None, None) if hx is None else tuple(hx))
        gi, gh = self._gates_of(x, h)
        i, f, g, o = np.split(gi + gh, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        return (h[0], c[0]) if one else (h, c)
