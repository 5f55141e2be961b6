"""Lookups by integer index: embeddings and one-hot encodings, as PyTorch's."""
from __future__ import annotations

import numpy as np

from ..autodiff import custom_vjp
from ..tracer import Tracer
from .arguments import _error


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
