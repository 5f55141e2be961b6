"""The handwritten digits that scikit-learn ships (1797 8x8 images), as 28x28 NCHW float32.

Each 8x8 image is upsampled 3x (24x24) and padded by 2 to 28x28, MNIST's size, so the CNN
is exactly the reference architecture. Nothing is downloaded.
"""
from __future__ import annotations

import numpy as np


def load_digits_28(test_fraction=0.2, seed=0):
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = digits.images.astype(np.float32) / 16.0            # N, 8, 8 in [0, 1]
    images = np.kron(images, np.ones((1, 3, 3), np.float32))     # N, 24, 24
    images = np.pad(images, ((0, 0), (2, 2), (2, 2)))[:, None]   # N, 1, 28, 28
    images = (images - images.mean()) / images.std()
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return (images[train], labels[train]), (images[test], labels[test])


def batches(x, y, batch_size, rng):
    """Shuffled full batches (the last partial batch is dropped: one shape, one trace)."""
    order = rng.permutation(len(y))
    for i in range(0, len(y) - batch_size + 1, batch_size):
        idx = order[i:i + batch_size]
        yield x[idx], y[idx]
