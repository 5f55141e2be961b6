"""Layers with PyTorch's constructor arguments and default initialisation."""
from __future__ import annotations

import inspect
import math

import numpy as np

from . import functional as F
from .module import Module


def _uniform(rng, bound, shape, dtype):
    return rng.uniform(-bound, bound, size=shape).astype(dtype)


def _hashable(v):
    """PyTorch takes lists for sizes; a Module's static attributes must hash (jit keys)."""
    return tuple(v) if isinstance(v, list) else v


class Linear(Module):
    """y = x W^T + b, W of shape (out, in); init as PyTorch: U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features, out_features, bias=True, *, rng=None, dtype=np.float32):
        rng = rng if rng is not None else np.random.default_rng()
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        self.in_features, self.out_features = in_features, out_features
        self.weight = _uniform(rng, bound, (out_features, in_features), dtype)
        self.bias = _uniform(rng, bound, (out_features,), dtype) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class Conv2d(Module):
    """NCHW convolution with OIHW weights; init as PyTorch (bound 1/sqrt(fan_in))."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, *, rng=None, dtype=np.float32):
        rng = rng if rng is not None else np.random.default_rng()
        kh, kw = F._pair(kernel_size)
        fan_in = in_channels // groups * kh * kw
        bound = 1.0 / math.sqrt(fan_in)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = (kh, kw), _hashable(stride), _hashable(
            padding)
        self.dilation, self.groups = _hashable(dilation), groups
        self.weight = _uniform(rng, bound, (out_channels, in_channels // groups, kh, kw), dtype)
        self.bias = _uniform(rng, bound, (out_channels,), dtype) if bias else None

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    def forward(self, x):
        return F.gelu(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Flatten(Module):
    """Flattens dims start_dim..end_dim (inclusive) into one, as torch.nn.Flatten."""

    def __init__(self, start_dim=1, end_dim=-1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        start, end = self.start_dim % x.ndim, self.end_dim % x.ndim
        # The flattened size spelled out, not -1: NumPy cannot infer -1 when another
        # dimension is 0 (an empty batch), which torch.nn.Flatten handles.
        size = int(np.prod(x.shape[start:end + 1], dtype=np.int64))
        return x.reshape(x.shape[:start] + (size,) + x.shape[end + 1:])


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0):
        self.kernel_size, self.stride = _hashable(kernel_size), _hashable(stride)
        self.padding = _hashable(padding)

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)


class Dropout(Module):
    """Dropout with an explicit seed: ``model(x, seed=step)``-style code passes it through
    ``Sequential``; in eval mode (``model.eval()``) it is the identity."""

    def __init__(self, p=0.5):
        self.p = p

    def forward(self, x, seed=0):
        return F.dropout(x, self.p, self.training, seed)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, *, dtype=np.float32):
        shape = (int(normalized_shape),) if isinstance(normalized_shape, (int, np.integer)) \
            else tuple(int(d) for d in normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = np.ones(shape, dtype)
        self.bias = np.zeros(shape, dtype)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


def _takes_seed(layer) -> bool:
    try:
        return "seed" in inspect.signature(layer.forward).parameters
    except (TypeError, ValueError):
        return False


class Sequential(Module):
    """Layers applied in order; a ``seed`` keyword reaches every layer whose ``forward`` takes
    one (offset per layer): Dropout, and the Dropouts of a nested Sequential or a Module with
    a ``seed`` parameter, so their masks change with the seed too."""

    def __init__(self, *layers):
        for i, layer in enumerate(layers):
            setattr(self, str(i), layer)

    def forward(self, x, seed=None):
        for i, layer in enumerate(self.children()):
            if seed is not None and _takes_seed(layer):
                x = layer(x, seed=seed * 1000 + i)
            else:
                x = layer(x)
        return x

    def __getitem__(self, i):
        return self.children()[i]

    def __len__(self):
        return len(self.children())
