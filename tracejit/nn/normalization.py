"""Normalization functions: layer, batch, group and instance norm, as PyTorch's."""
from __future__ import annotations

import numpy as np

from ..tracer import Tracer
from ..tracer.numpy.lifting import lift
from ..tracer.trace_state import current_trace, outside_array
from .arguments import _error


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(
        normalized_shape)
    if len(shape) > input.ndim or tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise _error(f"layer_norm: given normalized_shape={list(shape)}, expected input "
                     f"with shape [*, {', '.join(map(str, shape))}], but got input of "
                     f"size {list(input.shape)}",
                     "normalized_shape must be the input's trailing dimensions")
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    mean = input.mean(axis=axes, keepdims=True)
    centered = input - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    out = centered / np.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def _per_channel(v, x):
    """A (C,) vector shaped to broadcast along axis 1 of ``x`` (N, C, *)."""
    return v.reshape((1, -1) + (1,) * (x.ndim - 2))


def traced_buffer(buffer):
    """Where to write a buffer under a trace (``value_now`` reads it). One of a model that jit
    reads from outside (a closure's) is the trace's parameter for it, so that an update
    computed from it alone (``num_batches_tracked + 1``) is traced, rather than made by NumPy
    on the array itself once, at trace time; jit copies what is written into it back."""
    if type(buffer) is np.ndarray:
        lifted = outside_array(buffer)
        if lifted is not None:
            return lifted
    return buffer


def value_now(buffer):
    """A buffer's value in the running trace (``traced_buffer`` is where to write). One of
    an enclosing trace (a closure's BatchNorm inside grad) is lifted into it, so that what is
    computed from it is computed here and sees an earlier write here (a layer called twice)."""
    trace = current_trace()
    if isinstance(buffer, Tracer) and trace is not None and buffer._trace is not trace:
        return lift(buffer, trace)
    return buffer


def _in_dtype(value, x):
    """A momentum (a Python number, or a traced 1 / num_batches_tracked) in x's dtype."""
    if hasattr(value, "astype"):
        return value.astype(x.dtype)
    return np.asarray(value, dtype=x.dtype)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """torch.nn.functional.batch_norm over axis 1 of (N, C, *) inputs.

    Training normalizes with the batch's statistics (biased variance) and, where running
    stats are given, updates them IN PLACE as torch does (``(1 - momentum) * old + momentum *
    batch``, with the unbiased variance): under jit that is an ordinary write into the
    arrays, so it reaches the caller's arrays as every write into an argument does.
    Evaluation normalizes with the running stats."""
    if np.ndim(input) < 2:
        raise _error(f"batch_norm: expected an input of shape (N, C) or (N, C, *), got shape "
                     f"{tuple(np.shape(input))}", "give one sample a batch axis: x[None]")
    c = input.shape[1]
    for name, v in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if v is not None and tuple(np.shape(v)) != (c,):
            raise _error(f"batch_norm: {name} should contain {c} elements not "
                         f"{int(np.prod(np.shape(v)))}", "pass one value per channel (axis 1)")
    axes = (0,) + tuple(range(2, input.ndim))
    count = int(np.prod([input.shape[a] for a in axes]))
    if training and count == 1:
        raise _error(f"Expected more than 1 value per channel when training, got input size "
                     f"{list(input.shape)}", "train with batches of more than one sample, or "
                     "call model.eval() to normalize with the running statistics")
    if not training and (running_mean is None or running_var is None):
        raise _error(f"batch_norm: running_{'mean' if running_mean is None else 'var'} must "
                     "be defined in evaluation mode", "pass the running statistics, or "
                     "training=True to normalize with the batch's", RuntimeError)
    running_mean, running_var = traced_buffer(running_mean), traced_buffer(running_var)
    if training:
        mean = input.mean(axis=axes)
        centered = input - _per_channel(mean, input)
        var = (centered * centered).mean(axis=axes)
        if training and running_mean is not None:
            m = _in_dtype(momentum, input)
            one = np.asarray(1, input.dtype)
            unbiased = var * np.asarray(count / max(count - 1, 1), input.dtype)
            np.copyto(running_mean, (one - m) * value_now(running_mean) + m * mean,
                      casting="unsafe")
            np.copyto(running_var, (one - m) * value_now(running_var) + m * unbiased,
                      casting="unsafe")
    else:
        mean = value_now(running_mean).astype(input.dtype)
        var = value_now(running_var).astype(input.dtype)
        centered = input - _per_channel(mean, input)
    out = centered / np.sqrt(_per_channel(var, input) + np.asarray(eps, input.dtype))
    if weight is not None:
        out = out * _per_channel(weight, input)
    if bias is not None:
        out = out + _per_channel(bias, input)
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.group_norm: each sample's channels (axis 1) split into
    ``num_groups`` groups, each normalized over its channels and positions."""
    if np.ndim(input) < 2:
        raise _error(f"group_norm: expected an input of shape (N, C, *), got shape "
                     f"{tuple(np.shape(input))}")
    n, c = input.shape[:2]
    if num_groups <= 0 or c % num_groups:
        raise _error(f"Expected number of channels in input to be divisible by num_groups, "
                     f"but got input of shape {list(input.shape)} and num_groups={num_groups}")
    for name, v in (("weight", weight), ("bias", bias)):
        if v is not None and tuple(np.shape(v)) != (c,):
            raise _error(f"group_norm: Expected {name} to be a vector of size equal to the "
                         f"number of channels in input, but got {name} of shape "
                         f"{list(np.shape(v))} and input of shape {list(input.shape)}")
    groups = input.reshape(n, num_groups, -1)
    mean = groups.mean(axis=2, keepdims=True)
    centered = groups - mean
    var = (centered * centered).mean(axis=2, keepdims=True)
    out = (centered / np.sqrt(var + np.asarray(eps, input.dtype))).reshape(input.shape)
    if weight is not None:
        out = out * _per_channel(weight, input)
    if bias is not None:
        out = out + _per_channel(bias, input)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """torch.nn.functional.instance_norm, as torch computes it: batch_norm of the input seen
    as one sample of N * C channels, the running stats (if any) averaged over the batch."""
    if np.ndim(input) < 3:
        raise _error(f"instance_norm: expected an input of shape (N, C, *), got shape "
                     f"{tuple(np.shape(input))}")
    n, c = input.shape[:2]
    if use_input_stats and int(np.prod(input.shape[2:])) == 1:
        raise _error(f"Expected more than 1 spatial element when training, got input size "
                     f"{list(input.shape)}")
    flat = input.reshape((1, n * c) + tuple(input.shape[2:]))
    running_mean, running_var = traced_buffer(running_mean), traced_buffer(running_var)
    rm = None if running_mean is None else np.tile(value_now(running_mean), n)
    rv = None if running_var is None else np.tile(value_now(running_var), n)
    out = batch_norm(flat, rm, rv, None, None, use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        np.copyto(running_mean, rm.reshape(n, c).mean(axis=0), casting="unsafe")
        np.copyto(running_var, rv.reshape(n, c).mean(axis=0), casting="unsafe")
    out = out.reshape(input.shape)
    if weight is not None:
        out = out * _per_channel(weight, input)
    if bias is not None:
        out = out + _per_channel(bias, input)
    return out
