"""Four gaps a session noticed and left alone: jitted cross_entropy with targets out of range,
jacrev/jacfwd of pytree outputs, ndarray.take of traced indices, and the cost of keeping
Numba's typing answers on disk."""
import itertools
import operator
import os
import sys

import numpy as np
import pytest

import tracejit as tj

F = tj.nn.functional
LOGITS = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


# -- 1. cross_entropy / nll_loss: targets outside [0, C) inside jit ------------------------------

@pytest.mark.parametrize("bad", [-1, -3, 3, 5])
def test_jitted_cross_entropy_and_nll_loss_reject_a_target_outside_the_classes(bad):
    """PyTorch (and eager tracejit) reject any target outside [0, C) but ignore_index; a
    negative one inside jit was counted from the end, as np.take does, and gave the loss of
    class C + t."""
    target = np.array([0, 1, bad, 2], np.int64)
    with pytest.raises(IndexError, match="Target .* is out of bounds"):
        F.cross_entropy(LOGITS, target)                       # eager: the reference
    for fn in (lambda x, t: F.cross_entropy(x, t), lambda x, t: F.nll_loss(x, t),
               tj.grad(lambda x, t: F.cross_entropy(x, t))):
        with pytest.raises(IndexError, match="out of bounds"):
            tj.jit(fn, backend="numpy")(LOGITS, target)


def test_compiled_cross_entropy_rejects_a_negative_target_and_keeps_ignore_index():
    f = tj.jit(lambda x, t: F.cross_entropy(x, t, weight=np.array([1, 2, 3], np.float32)),
               tiered=False)
    with pytest.raises(IndexError, match="out of bounds in indexing or np.take at "
                                         "functional.py"):
        f(LOGITS, np.array([0, 1, -1, 2], np.int64))
    ignored = np.array([0, -100, 2, 1], np.int64)
    np.testing.assert_allclose(
        f(LOGITS, ignored),
        F.cross_entropy(LOGITS, ignored, weight=np.array([1, 2, 3], np.float32)), rtol=1e-6)
