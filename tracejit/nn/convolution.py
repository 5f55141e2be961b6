"""Convolutions with PyTorch's layouts (NCHW images, OIHW kernels) and arguments."""
from __future__ import annotations

import numpy as np

from .arguments import _error, _images, _pair


def _conv_padding(padding, kernel, stride, dilation, name="conv2d"):
    """((top, bottom), (left, right)) for an int, a pair, or PyTorch's 'valid' / 'same'."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding != "same":
            raise _error(f"{name}: Invalid padding string {padding!r}, should be one of "
                         "{'valid', 'same'}", "pass 'valid', 'same', an int or a pair")
        if stride != (1, 1):
            raise _error(f"{name}: padding='same' is not supported for strided convolutions",
                         "pass the padding as an int or a pair")
        # PyTorch puts the odd element of the total padding on the bottom / right.
        th, tw = (d * (k - 1) for d, k in zip(dilation, kernel))
        return (th // 2, th - th // 2), (tw // 2, tw - tw // 2)
    ph, pw = _pair(padding)
    return (ph, ph), (pw, pw)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation, as in PyTorch) by im2col + one batched matmul.

    ``padding`` is an int, a pair, or 'valid' / 'same' (as in PyTorch). The im2col is the
    padded input's sliding windows (strides and dilations: slices of them); under jit one
    ``window`` op, index arithmetic inside one fused copy, and the contraction is a single
    BLAS call.
    """
    input, one = _images(input, "conv2d")
    if one:
        return conv2d(input, weight, bias, stride, padding, dilation, groups)[0]
    if np.ndim(weight) != 4:
        raise _error(f"conv2d: the weight must be 4-D (out_channels, in_channels / groups, kH, "
                     f"kW), got shape {tuple(np.shape(weight))}", "pass an OIHW weight")
    return _conv(input, weight, bias, _pair(stride), padding, _pair(dilation), groups,
                 "conv2d")


def _conv(input, weight, bias, stride, padding, dilation, groups, name):
    """The convolution of 4-D ``input`` and ``weight`` (conv1d's with a height of one)."""
    sh, sw = stride
    dh, dw = dilation
    n, c, h, w = input.shape
    o, cg, kh, kw = weight.shape
    if min(sh, sw, dh, dw, groups) <= 0:
        raise _error(f"{name}: stride {(sh, sw)}, dilation {(dh, dw)} and groups "
                     f"{groups} must be positive")
    if c != cg * groups or o % groups:
        raise _error(f"{name}: input of shape {tuple(input.shape)} has {c} channels, but the "
                     f"weight {tuple(weight.shape)} with groups={groups} expects "
                     f"{cg * groups}", "images are (N, C, H, W), channels first: check the "
                     "layer's in_channels, or move the channel axis of NHWC images with "
                     "x.transpose(0, 3, 1, 2)")
    pad_h, pad_w = _conv_padding(padding, (kh, kw), (sh, sw), (dh, dw), name)
    if min(pad_h + pad_w) < 0:
        raise _error(f"{name}: negative padding {padding} is not supported",
                     "crop the input instead")
    if h + sum(pad_h) < dh * (kh - 1) + 1 or w + sum(pad_w) < dw * (kw - 1) + 1:
        raise _error(f"{name}: the padded input's size per channel "
                     f"{(h + sum(pad_h), w + sum(pad_w))} is smaller than the kernel's "
                     f"{(dh * (kh - 1) + 1, dw * (kw - 1) + 1)}",
                     "use a smaller kernel, or pad the input (padding=...)")
    x = input
    if any(pad_h + pad_w):
        x = np.pad(input, ((0, 0), (0, 0), pad_h, pad_w))
    oh = (h + sum(pad_h) - dh * (kh - 1) - 1) // sh + 1
    ow = (w + sum(pad_w) - dw * (kw - 1) - 1) // sw + 1
    # The batch goes inside the columns: cols is (C*KH*KW, N*OH*OW), so each group's
    # convolution is ONE large GEMM, W (O, C*KH*KW) @ cols, with no per-image loop and no
    # broadcast copy of W; its backward is two large GEMMs too.
    xt = x.transpose(1, 0, 2, 3)                              # c, n, h, w
    windows = np.lib.stride_tricks.sliding_window_view(
        xt, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw, ::dh, ::dw]           # c, n, oh, ow, kh, kw
    cols = windows.transpose(0, 4, 5, 1, 2, 3)                # c, kh, kw, n, oh, ow
    outs = []
    og = o // groups
    for g in range(groups):
        cg_cols = cols[g * cg:(g + 1) * cg].reshape(cg * kh * kw, n * oh * ow)
        wg = weight[g * og:(g + 1) * og].reshape(og, cg * kh * kw)
        outs.append(wg @ cg_cols)                             # og, n*oh*ow
    out = outs[0] if groups == 1 else np.concatenate(outs, axis=0)
    out = out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3)
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1)
    return out


def _single(v, name, what) -> int:
    """torch's int-or-1-tuple size of a 1-D convolution."""
    if isinstance(v, (int, np.integer)):
        return int(v)
    v = tuple(v)
    if len(v) != 1:
        raise _error(f"{name}: expected {what} to be a single integer value or a list of 1 "
                     f"values to match the convolution dimensions, but got {what}={list(v)}")
    return int(v[0])


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C, L) signals (or one (C, L) signal) with (O, C / groups, K)
    kernels, as torch's: conv2d's im2col on a height of one, so one GEMM per group."""
    ndim = np.ndim(input)
    if ndim not in (2, 3):
        raise _error(f"conv1d: expected a 2-D (unbatched) or 3-D (batched) input, but got an "
                     f"input of shape {tuple(np.shape(input))}",
                     "signals are (N, C, L), or (C, L) for one signal; give a batch of "
                     "single-channel signals of shape (N, L) a channel axis with x[:, None]")
    if ndim == 2:
        return conv1d(input[None], weight, bias, stride, padding, dilation, groups)[0]
    if np.ndim(weight) != 3:
        raise _error(f"conv1d: the weight must be 3-D (out_channels, in_channels / groups, "
                     f"kW), got shape {tuple(np.shape(weight))}", "pass an OIW weight")
    c, (o, cg, _) = input.shape[1], weight.shape
    if groups > 0 and (c != cg * groups or o % groups):
        raise _error(f"conv1d: input of shape {tuple(input.shape)} has {c} channels, but the "
                     f"weight {tuple(weight.shape)} with groups={groups} expects "
                     f"{cg * groups}", "signals are (N, C, L), channels first: check the "
                     "layer's in_channels, or move the channel axis of (N, L, C) inputs with "
                     "x.transpose(0, 2, 1)")
    s, d = _single(stride, "conv1d", "stride"), _single(dilation, "conv1d", "dilation")
    p = padding if isinstance(padding, str) else (0, _single(padding, "conv1d", "padding"))
    out = _conv(input[:, :, None], weight[:, :, None], bias, (1, s), p, (1, d), groups,
                "conv1d")
    return out[:, :, 0]
