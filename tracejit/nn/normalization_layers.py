"""Normalization layers with PyTorch's arguments, parameters and buffers: LayerNorm,
BatchNorm1d / BatchNorm2d (running statistics as buffers, updated in place in training mode),
GroupNorm and InstanceNorm2d."""
from __future__ import annotations

import warnings

import numpy as np

from . import normalization as N
from .arguments import _error
from .layers import _dtype
from .module import Module


class LayerNorm(Module):
    """torch.nn.LayerNorm: ``elementwise_affine=False`` holds no weight or bias,
    ``bias=False`` no bias."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, *,
                 dtype=np.float32):
        shape = (int(normalized_shape),) if isinstance(normalized_shape, (int, np.integer)) \
            else tuple(int(d) for d in normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = np.ones(shape, _dtype(dtype)) if elementwise_affine else None
        self.bias = np.zeros(shape, _dtype(dtype)) if elementwise_affine and bias else None

    def forward(self, x):
        return N.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class _NormBase(Module):
    """torch's _NormBase: weight (ones) and bias (zeros) if ``affine``; running_mean (zeros),
    running_var (ones) and num_batches_tracked (int64 0) as buffers if
    ``track_running_stats``, else those buffers are None."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, *, dtype=np.float32):
        dtype = _dtype(dtype)
        self.num_features, self.eps, self.momentum = int(num_features), eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = np.ones(num_features, dtype) if affine else None
        self.bias = np.zeros(num_features, dtype) if affine else None
        stats = track_running_stats
        self.register_buffer("running_mean", np.zeros(num_features, dtype) if stats else None)
        self.register_buffer("running_var", np.ones(num_features, dtype) if stats else None)
        self.register_buffer("num_batches_tracked",
                             np.zeros((), np.int64) if stats else None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean[...] = 0
            self.running_var[...] = 1
            self.num_batches_tracked[...] = 0


class _BatchNorm(_NormBase):
    _dims: tuple = ()
    _layout = ""

    def forward(self, input):
        if np.ndim(input) not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise _error(f"{type(self).__name__}: expected {want} input (got "
                         f"{np.ndim(input)}D input)", self._layout)
        # torch's exponential_average_factor: momentum, or 1 / num_batches_tracked (a
        # cumulative average) when momentum is None; counted in place, as torch does
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            count = N.traced_buffer(self.num_batches_tracked)
            now = N.value_now(count) + 1
            np.copyto(count, now)
            if self.momentum is None:
                factor = 1.0 / now
        training = self.training or (self.running_mean is None and self.running_var is None)
        stats = not self.training or self.track_running_stats
        return N.batch_norm(input, self.running_mean if stats else None,
                            self.running_var if stats else None, self.weight, self.bias,
                            training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """torch.nn.BatchNorm1d over (N, C) or (N, C, L) inputs."""
    _dims = (2, 3)
    _layout = "batches are (N, C) or (N, C, L): give one sample a batch axis, x[None]"


class BatchNorm2d(_BatchNorm):
    """torch.nn.BatchNorm2d over (N, C, H, W) inputs."""
    _dims = (4,)
    _layout = "batches of images are (N, C, H, W): give one image a batch axis, x[None]"


class GroupNorm(Module):
    """torch.nn.GroupNorm: per-channel weight (ones) and bias (zeros) if ``affine``."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, *, dtype=np.float32):
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.affine = affine
        self.weight = np.ones(num_channels, _dtype(dtype)) if affine else None
        self.bias = np.zeros(num_channels, _dtype(dtype)) if affine else None

    def forward(self, input):
        return N.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


class InstanceNorm2d(_NormBase):
    """torch.nn.InstanceNorm2d: (N, C, H, W) or one (C, H, W) image; by default no affine
    parameters and no running statistics, as torch's."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, *, dtype=np.float32):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype=dtype)

    def forward(self, input):
        if np.ndim(input) not in (3, 4):
            raise _error(f"InstanceNorm2d: expected 3D or 4D input (got {np.ndim(input)}D "
                         "input)", "images are (N, C, H, W), or (C, H, W) for one")
        if input.shape[-3] != self.num_features:
            msg = (f"expected input's size at dim={input.ndim - 3} to match num_features "
                   f"({self.num_features}), but got: {input.shape[-3]}.")
            if self.affine:
                raise _error(f"InstanceNorm2d: {msg}")
            warnings.warn(msg + " You can silence this warning by not passing in num_features,"
                          " which is not used because affine=False", stacklevel=2)
        if input.ndim == 3:
            return self.forward(input[None])[0]
        return N.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               0.0 if self.momentum is None else self.momentum, self.eps)
