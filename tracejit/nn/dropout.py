"""Dropout with an explicit seed: a counter-based hash, the same eagerly and compiled."""
from __future__ import annotations

import numpy as np

from ..tracer import Tracer
from .arguments import _error, _float

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
