"""Layers with PyTorch's constructor arguments and default initialisation."""
from __future__ import annotations

import inspect
import math

import numpy as np

from . import functional as F
from .module import Module, delete_layers, renumber, set_layer


def _uniform(rng, bound, shape, dtype):
    return rng.uniform(-bound, bound, size=shape).astype(_dtype(dtype))


def _dtype(dtype):
    """torch's dtype=None: the default float32 (NumPy's None is float64)."""
    return np.float32 if dtype is None else dtype


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
                 dilation=1, groups=1, bias=True, padding_mode="zeros", *, rng=None,
                 dtype=np.float32):
        rng = rng if rng is not None else np.random.default_rng()
        _check_padding_mode(padding_mode)
        self.padding_mode = padding_mode
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
        padding = self.padding
        if self.padding_mode != "zeros":
            # torch pads with the mode first, then convolves without padding
            ph, pw = F._conv_padding(padding, self.kernel_size, F._pair(self.stride),
                                     F._pair(self.dilation))
            x = np.pad(x, ((0, 0),) * (x.ndim - 2) + (ph, pw),
                       mode=_PAD_MODES[self.padding_mode])
            padding = 0
        return F.conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv1d(Module):
    """(N, C, L) convolution with (O, C / groups, K) weights; init as PyTorch (bound
    1/sqrt(fan_in)), ``padding_mode`` as Conv2d's."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", *, rng=None,
                 dtype=np.float32):
        rng = rng if rng is not None else np.random.default_rng()
        _check_padding_mode(padding_mode)
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        (k,) = _single(kernel_size)
        bound = 1.0 / math.sqrt(in_channels // groups * k)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, (k,)
        self.stride, self.dilation = _single(stride), _single(dilation)
        self.padding = padding if isinstance(padding, str) else _single(padding)
        self.groups, self.padding_mode = groups, padding_mode
        self.weight = _uniform(rng, bound, (out_channels, in_channels // groups, k), dtype)
        self.bias = _uniform(rng, bound, (out_channels,), dtype) if bias else None

    def forward(self, x):
        padding = self.padding
        if self.padding_mode != "zeros":
            # torch pads with the mode first, then convolves without padding
            _, pw = F._conv_padding(padding if isinstance(padding, str) else (0, padding[0]),
                                    (1,) + self.kernel_size, (1,) + self.stride,
                                    (1,) + self.dilation, "conv1d")
            x = np.pad(x, ((0, 0),) * (x.ndim - 1) + (pw,),
                       mode=_PAD_MODES[self.padding_mode])
            padding = 0
        return F.conv1d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


def _single(v) -> tuple:
    """torch's int-or-1-tuple size, as a 1-tuple."""
    return (int(v),) if isinstance(v, (int, np.integer)) else tuple(int(a) for a in v)


# torch's Conv2d padding modes as np.pad's
def _check_padding_mode(padding_mode):
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"padding_mode must be one of {tuple(_PAD_MODES)}, but got "
                         f"padding_mode='{padding_mode}'")


_PAD_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap"}


class Embedding(Module):
    """torch.nn.Embedding: weight (num_embeddings, embedding_dim) drawn from N(0, 1), the
    ``padding_idx`` row zeros, and no gradient through the positions that read it."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, *, rng=None,
                 dtype=np.float32):
        if max_norm is not None or scale_grad_by_freq:
            raise ValueError("Embedding: max_norm and scale_grad_by_freq are not supported")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        rng = rng if rng is not None else np.random.default_rng()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        self.weight = rng.standard_normal((num_embeddings, embedding_dim)).astype(
            _dtype(dtype))
        if padding_idx is not None:
            self.weight[padding_idx] = 0

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx)


class ReLU(Module):
    def __init__(self, inplace=False):
        self.inplace = inplace

    def forward(self, x):
        return F.relu(x, self.inplace)


class GELU(Module):
    def __init__(self, approximate="none"):
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)


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
    """torch.nn.MaxPool2d's arguments, in its order (dilation was missing, so
    ``MaxPool2d(3, 2, 1, 1)`` failed); ``ceil_mode=True`` and ``return_indices=True`` are
    refused."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        if return_indices:
            raise ValueError("MaxPool2d: return_indices=True is not supported")
        F._no_ceil_mode(ceil_mode)
        self.kernel_size, self.stride = _hashable(kernel_size), _hashable(stride)
        self.padding, self.dilation = _hashable(padding), _hashable(dilation)

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation)


class AvgPool2d(Module):
    """torch.nn.AvgPool2d over ``F.avg_pool2d`` (``ceil_mode=True`` refused)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        F._no_ceil_mode(ceil_mode)
        self.kernel_size, self.stride = _hashable(kernel_size), _hashable(stride)
        self.padding, self.count_include_pad = _hashable(padding), count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, False,
                            self.count_include_pad, self.divisor_override)


class Dropout(Module):
    """Dropout with an explicit seed: ``model(x, seed=step)``-style code passes it through
    ``Sequential``; in eval mode (``model.eval()``) it is the identity."""

    def __init__(self, p=0.5, inplace=False):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x, seed=0):
        return F.dropout(x, self.p, self.training, seed)


def _takes_seed(layer) -> bool:
    try:
        return "seed" in inspect.signature(layer.forward).parameters
    except (TypeError, ValueError):
        return False


class Sequential(Module):
    """Layers applied in order; a ``seed`` keyword reaches every layer whose ``forward`` takes
    one (offset per layer): Dropout, and the Dropouts of a nested Sequential or a Module with
    a ``seed`` parameter, so their masks change with the seed too.

    As ``torch.nn.Sequential``: ``Sequential(a, b)`` names the layers ``"0"``, ``"1"``;
    ``Sequential(OrderedDict(name=layer, ...))`` (or a dict) keeps the names. Indexing, a
    slice (a Sequential keeping the layers' names), ``len``, iteration, ``append``,
    ``extend``, ``insert``, ``pop``, ``s[i] = layer`` (keeping its name) and ``del s[i]`` (the
    layers numbered again, as torch's)."""

    def __init__(self, *layers):
        if len(layers) == 1 and isinstance(layers[0], dict):
            for name, layer in layers[0].items():
                self.add_module(name, layer)
        else:
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
        if isinstance(i, slice):
            return Sequential(dict(list(self.named_children())[i]))
        return self.children()[i]

    def __setitem__(self, i, module) -> None:
        set_layer(self, i, module)

    def __delitem__(self, i) -> None:
        delete_layers(self, i)

    def pop(self, i):
        module = self[i]
        del self[i]
        return module

    def __len__(self):
        return len(self.children())

    def __iter__(self):
        return iter(self.children())

    def append(self, module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> "Sequential":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module) -> "Sequential":
        """As PyTorch's: the layers are renumbered ``"0"``, ``"1"``, ..."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        layers = self.children()
        layers.insert(index + n if index < 0 else index, module)
        renumber(self, layers)
        return self


class Identity(Module):
    """Returns its input (``torch.nn.Identity``; constructor arguments are ignored)."""

    def __init__(self, *args, **kwargs):
        pass

    def forward(self, x):
        return x


class Softmax(Module):
    def __init__(self, dim=None):
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim if self.dim is not None else _legacy_softmax_dim(x))


class LogSoftmax(Module):
    def __init__(self, dim=None):
        self.dim = dim

    def forward(self, x):
        return F.log_softmax(x, self.dim if self.dim is not None else _legacy_softmax_dim(x))


def _legacy_softmax_dim(x) -> int:
    """PyTorch's choice for dim=None (with a deprecation warning there): 0 for 0-, 1- and
    3-D inputs, else 1."""
    return 0 if x.ndim in (0, 1, 3) else 1


# -- losses: PyTorch's loss modules over nn.functional ------------------------------------------

def _static_weight(weight):
    """A class-weight vector as a static tuple of floats: a constant of the program, not a
    parameter (PyTorch keeps it as a buffer, which optimizers never update)."""
    if weight is None:
        return None
    w = np.asarray(weight, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"weight should be a 1-D array of one weight per class, got shape "
                         f"{w.shape}")
    return tuple(float(v) for v in w)


class _WeightedLoss(Module):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        self.reduction = F._reduction(reduction, size_average, reduce, type(self).__name__)
        self.class_weight = _static_weight(weight)

    @property
    def weight(self):
        return None if self.class_weight is None else np.array(self.class_weight)


class CrossEntropyLoss(_WeightedLoss):
    """``F.cross_entropy`` with the arguments given here: ``weight`` (a constant),
    ``ignore_index``, ``reduction``, ``label_smoothing``."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        F._check_smoothing(label_smoothing)
        self.ignore_index, self.label_smoothing = int(ignore_index), float(label_smoothing)

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = int(ignore_index)

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        self.reduction = F._reduction(reduction, size_average, reduce, "MSELoss")

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(Module):
    """``F.binary_cross_entropy_with_logits``; ``weight`` and ``pos_weight`` are held as
    constants (torch's buffers, which optimizers never update)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        self.reduction = F._reduction(reduction, size_average, reduce, "BCEWithLogitsLoss")
        self.weights = tuple(None if w is None else (np.shape(w), tuple(np.ravel(w).tolist()))
                             for w in (weight, pos_weight))

    def forward(self, input, target):
        weight, pos_weight = (None if w is None else np.array(w[1]).reshape(w[0]).astype(
            input.dtype) for w in self.weights)
        return F.binary_cross_entropy_with_logits(input, target, weight,
                                                  reduction=self.reduction,
                                                  pos_weight=pos_weight)
