"""Max and average pooling over windows of NCHW images, with PyTorch's arguments."""
from __future__ import annotations

import numpy as np

from .arguments import _error, _float, _images, _pair


def _windows(input, kernel_size, stride, padding, pad_value, dilation=1):
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride if stride is not None else kernel_size)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    n, c, h, w = _images(input, "pooling")[0].shape
    # PyTorch's checks: a larger padding makes windows of padding only (-inf maxima, 0/0
    # averages), and a window larger than the padded input an empty result.
    if min(kh, kw, sh, sw, dh, dw) <= 0 or min(ph, pw) < 0:
        raise _error(f"pooling: kernel_size {(kh, kw)}, stride {(sh, sw)} and dilation "
                     f"{(dh, dw)} must be positive and padding {(ph, pw)} non-negative")
    if 2 * ph > dh * (kh - 1) + 1 or 2 * pw > dw * (kw - 1) + 1:
        raise _error(f"pooling: pad should be at most half of effective kernel size, but "
                     f"got pad={(ph, pw)}, kernel_size={(kh, kw)} and dilation={(dh, dw)}",
                     "use a smaller padding")
    x = input
    if ph or pw:
        x = np.pad(input, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise _error(f"pooling: given input size {(h, w)}, the calculated output size "
                     f"{(oh, ow)} is too small", "use a smaller kernel_size, or pad the input")
    return [x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            for i in range(kh) for j in range(kw)]


def _no_ceil_mode(ceil_mode):
    if ceil_mode:
        raise _error("nn.functional pooling: ceil_mode=True is not supported",
                     "pad the input instead")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over each window (stride defaults to kernel_size); padding counts as -inf."""
    _no_ceil_mode(ceil_mode)
    input, one = _images(input, "max_pool2d")
    if one:
        return max_pool2d(input, kernel_size, stride, padding, dilation)[0]
    wins = _windows(input, kernel_size, stride, padding, -np.inf, dilation)
    out = wins[0]
    for win in wins[1:]:
        # A later window wins only if strictly larger (or NaN), so on ties the gradient goes
        # whole to the first maximum, as in PyTorch and JAX, not halved at each comparison.
        out = np.where((win > out) | np.isnan(win), win, out)
    return out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Average over each window. As in PyTorch, padding counts in the divisor unless
    ``count_include_pad=False``; ``divisor_override`` replaces the divisor."""
    _no_ceil_mode(ceil_mode)
    input, one = _images(input, "avg_pool2d")
    if one:
        return avg_pool2d(input, kernel_size, stride, padding, False, count_include_pad,
                          divisor_override)[0]
    wins = _windows(input, kernel_size, stride, padding, 0.0)
    out = wins[0]
    for win in wins[1:]:
        out = out + win
    if divisor_override is not None:
        return out / _float(out, divisor_override)
    if count_include_pad or not any(_pair(padding)):
        return out / _float(out, len(wins))
    # The number of real (unpadded) elements in each window: a constant, known from shapes.
    ones = np.ones((1, 1) + tuple(input.shape[2:]), np.float64)
    counts = sum(_windows(ones, kernel_size, stride, padding, 0.0))
    return out / counts.astype(out.dtype)
