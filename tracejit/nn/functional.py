"""Neural-network functions with PyTorch's names, arguments, layouts and semantics.

Each works eagerly on NumPy arrays and under ``jit``, ``grad`` and ``jvp``: they are written
with NumPy calls, which the tracer captures. Layouts are PyTorch's: NCHW images, OIHW kernels,
``(out, in)`` linear weights. The functions live in one module per concept (convolution.py,
pooling.py, normalization.py, ...); this module gathers them under torch's
``torch.nn.functional`` names.
"""
from __future__ import annotations

from .activations import (_softmax_input, erf, gelu, log_softmax, relu, sigmoid, softmax,
                          tanh)
from .arguments import _error, _float, _images, _pair
from .convolution import _conv_padding, conv1d, conv2d
from .dropout import _MOD, _hash_uniform, dropout
from .embedding import _no_gradient, embedding, one_hot
from .losses import (_REDUCTIONS, _check_smoothing, _class_rows, _class_weight,
                     _cross_entropy_probs, _nll_rows, _reduction,
                     binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss)
from .normalization import batch_norm, group_norm, instance_norm, layer_norm
from .pooling import _no_ceil_mode, _windows, avg_pool2d, max_pool2d

__all__ = ["linear", "conv1d", "conv2d", "max_pool2d", "avg_pool2d", "relu", "sigmoid", "tanh",
           "erf", "gelu", "softmax", "log_softmax", "cross_entropy", "nll_loss", "mse_loss",
           "binary_cross_entropy_with_logits", "layer_norm", "batch_norm", "group_norm",
           "instance_norm", "embedding", "one_hot", "dropout"]

_PRIVATE = (_softmax_input, _error, _float, _images, _pair, _conv_padding, _MOD, _hash_uniform,
            _no_gradient, _REDUCTIONS, _check_smoothing, _class_rows, _class_weight,
            _cross_entropy_probs, _nll_rows, _reduction, _no_ceil_mode, _windows)


def linear(input, weight, bias=None):
    out = input @ weight.T
    return out if bias is None else out + bias
