"""The reference models, written as PyTorch users write them."""
from __future__ import annotations

from .. import nn
from ..nn import functional as F


class SimpleCNN(nn.Module):
    def __init__(self, rng=None):
        self.conv1 = nn.Conv2d(1, 32, kernel_size=3, stride=1, padding=1, rng=rng)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3, stride=1, padding=1, rng=rng)
        self.fc1 = nn.Linear(64 * 28 * 28, 128, rng=rng)
        self.fc2 = nn.Linear(128, 10, rng=rng)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = x.reshape(x.shape[0], -1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


class MLP(nn.Module):
    """Dense -> ReLU -> Dense (softmax is inside the cross-entropy loss)."""

    def __init__(self, sizes=(784, 128, 10), rng=None):
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(sizes[0], sizes[1], rng=rng),
                                 nn.ReLU(), nn.Linear(sizes[1], sizes[2], rng=rng))

    def forward(self, x):
        return self.net(x)
