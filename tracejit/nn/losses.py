"""Loss functions with PyTorch's arguments, layouts and reductions."""
from __future__ import annotations

import warnings

import numpy as np

from ..tracer import Tracer
from ..tracer.errors import caller_location
from .activations import log_softmax
from .arguments import _error, _float

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
