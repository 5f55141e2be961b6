"""Neural-network functions with PyTorch's names, arguments, layouts and semantics.

Each works eagerly on NumPy arrays and under ``jit``, ``grad`` and ``jvp``: they are written
with NumPy calls, which the tracer captures. Layouts are PyTorch's: NCHW images, OIHW kernels,
``(out, in)`` linear weights.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import lax
from ..autodiff import custom_vjp
from ..tracer import Tracer
from ..tracer.errors import caller_location, numpy_error


def _error(what: str, hint: str = "", exc_type: type = ValueError) -> Exception:
    """A mistake in the arguments of an nn function, naming the user's line that called it
    (not this module's)."""
    return numpy_error(exc_type, what, hint, loc=caller_location())


def _images(input, name: str):
    """PyTorch's image layouts: (N, C, H, W), or one image (C, H, W), which gets a batch axis
    of one. Returns the 4-D input and whether it was one image."""
    ndim = np.ndim(input)
    if ndim not in (3, 4):
        raise _error(f"{name}: expected a 3-D (unbatched) or 4-D (batched) input, but got an "
                     f"input of shape {tuple(np.shape(input))}",
                     "images are (N, C, H, W), or (C, H, W) for one image; give grayscale "
                     "images of shape (N, H, W) a channel axis with x[:, None]")
    return (input[None], True) if ndim == 3 else (input, False)


def _pair(v) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, (int, np.integer)) else tuple(int(a) for a in v)


def _float(x, value):
    """A Python number as a 0-d array of x's dtype (keeps float32 math in float32)."""
    return np.asarray(value, dtype=x.dtype)


# -- layers ---------------------------------------------------------------------------------

def linear(input, weight, bias=None):
    out = input @ weight.T
    return out if bias is None else out + bias


def _conv_padding(padding, kernel, stride, dilation):
    """((top, bottom), (left, right)) for an int, a pair, or PyTorch's 'valid' / 'same'."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding != "same":
            raise _error(f"conv2d: Invalid padding string {padding!r}, should be one of "
                         "{'valid', 'same'}", "pass 'valid', 'same', an int or a pair")
        if stride != (1, 1):
            raise _error("conv2d: padding='same' is not supported for strided convolutions",
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
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    n, c, h, w = input.shape
    if np.ndim(weight) != 4:
        raise _error(f"conv2d: the weight must be 4-D (out_channels, in_channels / groups, kH, "
                     f"kW), got shape {tuple(np.shape(weight))}", "pass an OIHW weight")
    o, cg, kh, kw = weight.shape
    if min(sh, sw, dh, dw, groups) <= 0:
        raise _error(f"conv2d: stride {(sh, sw)}, dilation {(dh, dw)} and groups "
                     f"{groups} must be positive")
    if c != cg * groups or o % groups:
        raise _error(f"conv2d: input of shape {tuple(input.shape)} has {c} channels, but the "
                     f"weight {tuple(weight.shape)} with groups={groups} expects "
                     f"{cg * groups}", "images are (N, C, H, W), channels first: check the "
                     "layer's in_channels, or move the channel axis of NHWC images with "
                     "x.transpose(0, 3, 1, 2)")
    pad_h, pad_w = _conv_padding(padding, (kh, kw), (sh, sw), (dh, dw))
    if min(pad_h + pad_w) < 0:
        raise _error(f"conv2d: negative padding {padding} is not supported",
                     "crop the input instead")
    if h + sum(pad_h) < dh * (kh - 1) + 1 or w + sum(pad_w) < dw * (kw - 1) + 1:
        raise _error(f"conv2d: the padded input's size per channel "
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


# -- activations ----------------------------------------------------------------------------

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


# -- losses ---------------------------------------------------------------------------------

_REDUCTIONS = ("mean", "sum", "none")


def _reduction(reduction, size_average, reduce, name):
    """PyTorch's ``reduction`` argument, and its deprecated ``size_average`` / ``reduce``
    (either given: they decide, as ``torch.nn._reduction.legacy_get_string``)."""
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      "reduction='mean'|'sum'|'none' instead.", UserWarning, stacklevel=3)
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = ("mean" if size_average else "sum") if reduce else "none"
    if reduction not in _REDUCTIONS:
        raise _error(f"{name}: {reduction} is not a valid value for reduction",
                     "pass reduction='mean', 'sum' or 'none'")
    return reduction


def _class_rows(input, target, name):
    """PyTorch's layouts of class-index targets as rows: ``(C,)`` against a 0-d target,
    ``(N, C)`` against ``(N,)``, ``(N, C, d1, ...)`` against ``(N, d1, ...)`` (the classes
    moved last and flattened). Returns the ``(M, C)`` rows, the ``(M,)`` targets and the shape
    of the unreduced loss. PyTorch's batch-size check: a broadcast would silently pair every
    row with one target."""
    if np.ndim(input) == 0:
        raise _error(f"{name}: the input must have a class axis, got a 0-d input",
                     "pass scores of shape (C,), (N, C) or (N, C, d1, ...)")
    if input.ndim == 1 and np.ndim(target) == 0:                  # one unbatched sample
        rows, target, shape = input[None], target.reshape(1), ()
    elif input.ndim > 2 and np.ndim(target) == input.ndim - 1:
        shape = (input.shape[0],) + tuple(input.shape[2:])
        if tuple(target.shape) != shape:
            raise _error(f"{name}: expected target of shape {shape} for an input of shape "
                         f"{tuple(input.shape)}, got {tuple(target.shape)}",
                         "pass the input as (N, C, d1, ...) and one class index per element "
                         "of (N, d1, ...)")
        rows = input.transpose((0,) + tuple(range(2, input.ndim)) + (1,))
        rows, target = rows.reshape(-1, rows.shape[-1]), target.reshape(-1)
    else:
        rows, shape = input, (input.shape[0],) if input.ndim > 1 else ()
    if target.dtype.kind not in "iu":
        raise _error(f"{name}: the target has dtype {target.dtype} and shape "
                     f"{tuple(target.shape)}, but class-index targets must be integers (a "
                     "float target holds class probabilities, and has the input's shape "
                     f"{tuple(input.shape)})",
                     "convert class labels with target.astype(np.int64)", TypeError)
    if rows.ndim != 2 or target.ndim != 1 or target.size != rows.shape[0]:
        raise _error(f"{name}: expected input batch_size ({rows.shape[0]}) to match "
                     f"target batch_size ({target.size})",
                     "pass one class index per row of the input")
    return rows, target.astype(np.int64), shape


def _class_weight(weight, n_classes, dtype, name):
    if weight is None:
        return None
    if np.shape(weight) != (n_classes,):
        raise _error(f"{name}: weight tensor should be defined either for all {n_classes} "
                     f"classes or no classes but got weight tensor of shape: "
                     f"{list(np.shape(weight))}", "pass one weight per class")
    return (weight if isinstance(weight, Tracer) else np.asarray(weight)).astype(dtype)


def _nll_rows(logp, target, weight, ignore_index, reduction, shape, smoothing, name):
    """PyTorch's nll_loss of log-probability rows ``(M, C)`` and class indices ``(M,)``, with
    cross_entropy's label smoothing (aten's cross_entropy_loss_label_smoothing):

        loss_n = -w[t_n] logp[n, t_n]                     (0 where t_n == ignore_index)
        smoothed: (1 - eps) loss_n + eps / C * (-sum_c w[c] logp[n, c])
        mean: sum_n loss_n / sum_n w[t_n] over the targets not ignored (all ignored: nan)
    """
    n_classes = logp.shape[1]
    weight = _class_weight(weight, n_classes, logp.dtype, name)
    if not isinstance(target, Tracer):
        bad = target[(target != ignore_index) & ((target < 0) | (target >= n_classes))]
        if bad.size:
            raise _error(f"{name}: Target {int(bad[0])} is out of bounds.",
                         f"class indices are 0 ... {n_classes - 1}, or ignore_index "
                         f"({ignore_index})", IndexError)
    zero = _float(logp, 0.0)
    valid = target != ignore_index
    if isinstance(target, Tracer):
        # Traced targets are known only when the program runs: the gather below checks them
        # then (the IndexError of codegen/errors.py, naming this line). It counts negative
        # indices from the end, as np.take does, where PyTorch rejects them: a negative target
        # other than ignore_index gets index C, out of range, so it fails too (it gave the
        # loss of class C + t).
        target = np.where(target < 0, np.int64(n_classes), target)
    safe = np.where(valid, target, np.int64(0))          # an index in range for ignored rows
    picked = np.take_along_axis(logp, safe.reshape(-1, 1), axis=1).reshape(-1)
    if weight is None:
        w_t = valid.astype(logp.dtype)
        loss = np.where(valid, -picked, zero)
    else:
        # weight[t_n] as a masked row sum: np.take(weight, t) with a NumPy weight and traced
        # targets would need the targets' values
        hit = safe.reshape(-1, 1) == np.arange(n_classes, dtype=np.int64)
        w_t = np.where(valid, np.where(hit, weight, zero).sum(axis=1), zero)
        loss = np.where(valid, -picked * w_t, zero)
    if smoothing:
        smooth = -(logp.sum(axis=1) if weight is None else (logp * weight).sum(axis=1))
        loss = (_float(logp, 1.0 - smoothing) * loss
                + _float(logp, smoothing / n_classes) * np.where(valid, smooth, zero))
    if reduction == "none":
        return loss.reshape(shape)
    total = loss.sum()
    if reduction == "sum":
        return total
    # All targets ignored (or an empty batch): 0 / 0 = nan, as PyTorch, and zero gradients
    # (the where above selects them, it does not multiply by 0); a zero weight sum with targets
    # left is PyTorch's 0 / 0 too. (A test for "none left" cost the MLP step two kernels.)
    with np.errstate(divide="ignore", invalid="ignore"):
        return total / w_t.sum()


def _check_smoothing(label_smoothing):
    if not 0.0 <= label_smoothing <= 1.0:
        raise _error(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: "
                     f"{label_smoothing}")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """torch.nn.functional.cross_entropy: logits ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``
    (classes on axis 1) against class indices (``()``, ``(N,)``, ``(N, d1, ...)``) or class
    probabilities (a float target of the input's shape).

    ``weight`` (one per class) scales each target's term; the weighted mean divides by the
    sum of the weights of the targets not ignored. Targets equal to ``ignore_index`` add
    nothing (a mean with every target ignored is nan). ``label_smoothing`` eps mixes the
    target with the uniform distribution: ``(1 - eps) * nll + eps / C * sum_c -w_c logp_c``.
    With probability targets the mean divides by the number of samples (not the weights),
    and ``ignore_index`` must stay negative, as in PyTorch.
    """
    reduction = _reduction(reduction, size_average, reduce, "cross_entropy")
    _check_smoothing(label_smoothing)
    logp = log_softmax(input, dim=1 if np.ndim(input) > 1 else 0)
    if tuple(np.shape(target)) == tuple(np.shape(input)):
        return _cross_entropy_probs(logp, target, weight, ignore_index, reduction,
                                    label_smoothing)
    rows, target, shape = _class_rows(logp, target, "cross_entropy")
    return _nll_rows(rows, target, weight, ignore_index, reduction, shape, label_smoothing,
                     "cross_entropy")


def _cross_entropy_probs(logp, target, weight, ignore_index, reduction, smoothing):
    """aten's cross_entropy_loss_prob_target."""
    if target.dtype.kind != "f":
        raise _error(f"cross_entropy: a target of the input's shape {tuple(logp.shape)} holds "
                     f"class probabilities, and must be floating point, got {target.dtype}",
                     "for class indices, pass one integer per sample (shape (N,) for an "
                     "(N, C) input)", TypeError)
    if ignore_index >= 0:
        raise _error("cross_entropy: ignore_index is not supported for floating point target",
                     "leave ignore_index at its default with probability targets")
    class_axis = 1 if logp.ndim > 1 else 0
    n_classes = logp.shape[class_axis]
    if smoothing:
        target = (target * _float(logp, 1.0 - smoothing)
                  + _float(logp, smoothing / n_classes))
    terms = logp * target
    weight = _class_weight(weight, n_classes, logp.dtype, "cross_entropy")
    if weight is not None:
        terms = terms * weight.reshape((n_classes,) + (1,) * (logp.ndim - 1 - class_axis))
    if reduction == "none":
        return -terms.sum(axis=class_axis)
    total = -terms.sum()
    if reduction == "sum":
        return total
    samples = logp.size // n_classes if n_classes else 0
    if samples == 0:
        return total * _float(logp, np.nan)
    return total / _float(logp, samples)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """torch.nn.functional.nll_loss of log-probabilities (classes on axis 1): ``weight``,
    ``ignore_index`` and ``reduction`` as in :func:`cross_entropy` (class indices only)."""
    reduction = _reduction(reduction, size_average, reduce, "nll_loss")
    rows, target, shape = _class_rows(input, target, "nll_loss")
    return _nll_rows(rows, target, weight, ignore_index, reduction, shape, 0.0, "nll_loss")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(reduction, size_average, reduce, "mse_loss")
    if np.shape(input) != np.shape(target):
        # PyTorch's warning: (N, 1) predictions against (N,) targets broadcast to (N, N)
        shapes = f"{tuple(np.shape(target))} and {tuple(np.shape(input))}"
        loc = caller_location()
        msg = (f"mse_loss: the target's and the input's shapes differ ({shapes}); they are "
               "broadcast together, which is likely not what you meant (a (N, 1) input and a "
               "(N,) target make N * N differences). Make them the same shape, e.g. "
               "input.reshape(target.shape)")
        if loc is None:
            warnings.warn(msg, UserWarning, stacklevel=2)
        else:
            warnings.warn_explicit(msg, UserWarning, loc.filename, loc.lineno)
    d = input - target
    sq = d * d
    if reduction == "none":
        return sq
    return sq.sum() if reduction == "sum" else sq.mean()


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """torch's: ``(1 - y) x + (1 + (pos_weight - 1) y) log(1 + exp(-x))`` per element (the
    log through logaddexp: stable, with the exact gradient sigmoid(x) - y at 0), times
    ``weight``; target and input of one shape, as torch requires."""
    reduction = _reduction(reduction, size_average, reduce, "binary_cross_entropy_with_logits")
    if np.shape(target) != np.shape(input):
        raise _error(f"binary_cross_entropy_with_logits: Target size ({tuple(np.shape(target))})"
                     f" must be the same as input size ({tuple(np.shape(input))})")
    one = _float(input, 1.0)
    log_weight = one if pos_weight is None else one + (pos_weight - one) * target
    loss = (one - target) * input + log_weight * np.logaddexp(_float(input, 0.0), -input)
    if weight is not None:
        loss = loss * weight
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


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


@custom_vjp
def _no_gradient(x):
    return x


_no_gradient.defvjp(lambda x: (x, None), lambda _, g: (np.zeros_like(g),))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` (num_embeddings, dim) at the integer ``input``, as torch's; the rows
    read at ``padding_idx`` pass no gradient to the weight."""
    if max_norm is not None or scale_grad_by_freq:
        raise _error("embedding: max_norm and scale_grad_by_freq are not supported")
    out = np.take(weight, input, axis=0)
    if padding_idx is None:
        return out
    pad = padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx
    return np.where((input == pad)[..., None], _no_gradient(out), out)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding, shape ``tensor.shape + (num_classes,)`` (as in PyTorch).

    As torch's: ``num_classes=-1`` (the default) is the largest class plus one (not under
    jit, where the values are not known: pass it), and a class outside ``0 ... num_classes -
    1`` is an error (the row of zeros it gave was silently no class; -1 gave no column)."""
    if not isinstance(tensor, Tracer):
        tensor = np.asarray(tensor)
    if tensor.dtype.kind not in "iu":
        raise _error(f"one_hot: the classes must be integers, got dtype {tensor.dtype}",
                     "convert them with .astype(np.int64)", TypeError)
    if not isinstance(tensor, Tracer):
        if num_classes < 0:
            if tensor.size == 0:
                raise _error("one_hot: can not infer total number of classes from an empty "
                             "array", "pass num_classes")
            num_classes = int(tensor.max()) + 1
        if tensor.size and tensor.min() < 0:
            raise _error("one_hot: Class values must be non-negative.")
        if tensor.size and tensor.max() >= num_classes:
            raise _error("one_hot: Class values must be smaller than num_classes.")
    elif num_classes < 0:
        raise _error("one_hot: num_classes=-1 infers the classes from the values, which are "
                     "not known while tracing", "pass num_classes")
    classes = np.arange(num_classes, dtype=np.int64)
    return (tensor[..., None] == classes).astype(np.int64)


# -- dropout --------------------------------------------------------------------------------

_MOD = 2 ** 32


def _hash_uniform(shape, seed):
    """Uniform [0, 1) numbers from a counter-based integer hash of (seed, element index).

    Pure integer arithmetic (exact and identical eagerly, traced and compiled), so dropout is
    deterministic for a given seed, and a traced seed changes the mask without retracing.
    """
    size = int(np.prod(shape)) if shape else 1
    idx = np.arange(size, dtype=np.int64).reshape(shape)
    if isinstance(seed, Tracer):
        seed = seed.astype(np.int64)
    else:
        seed = np.int64(seed)
    h = (idx + (seed % 2 ** 31) * np.int64(0x9E3779B9)) % _MOD
    for _ in range(2):
        h = h ^ (h // 65536)
        h = (h * np.int64(0x45D9F3B)) % _MOD
    h = h ^ (h // 65536)
    return h.astype(np.float64) / float(_MOD)


def dropout(input, p=0.5, training=True, seed=0):
    """Zero each element with probability p and scale the rest by 1/(1-p) (PyTorch's rule).

    ``seed`` is an explicit integer (or a traced integer array, so each step can pass a new
    one without retracing); the same seed gives the same mask.
    """
    if not 0.0 <= p <= 1.0:
        raise _error(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * _float(input, 0.0)
    keep = _hash_uniform(input.shape, seed) >= p
    return np.where(keep, input * _float(input, 1.0 / (1.0 - p)), _float(input, 0.0))
