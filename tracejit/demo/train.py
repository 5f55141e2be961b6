"""Train a model on the digits with one jitted step: forward, backward and Adam update."""
from __future__ import annotations

import time

import numpy as np

import tracejit

from ..nn import functional as F
from .. import optim
from .data import batches


def cross_entropy_loss(model, x, y):
    return F.cross_entropy(model(x), y)


def make_train_step(opt):
    @tracejit.jit
    def train_step(model, opt_state, x, y):
        loss, grads = tracejit.value_and_grad(cross_entropy_loss)(model, x, y)
        model, opt_state = opt.update(grads, opt_state, model)
        return model, opt_state, loss
    return train_step


@tracejit.jit
def predict(model, x):
    return np.argmax(model(x), axis=1)


def accuracy(model, x, y, batch_size):
    """Test accuracy, in full batches plus one remainder batch (two shapes, two traces)."""
    correct = 0
    for i in range(0, len(y), batch_size):
        correct += int((predict(model, x[i:i + batch_size]) == y[i:i + batch_size]).sum())
    return correct / len(y)


def train(name, model, data, epochs, batch_size=32, lr=1e-3, seed=0, show_ir=True,
          progress=True):
    (xtr, ytr), (xte, yte) = data
    opt = optim.Adam(lr=lr)
    state = opt.init(model)
    step = make_train_step(opt)
    rng = np.random.default_rng(seed)
    if show_ir:
        lines = step.lower(model, state, xtr[:batch_size], ytr[:batch_size]).ir.splitlines()
        print(f"-- head of {name}'s training step IR ({len(lines) - 2} ops) --")
        print("\n".join(lines[:12]) + "\n  ...")
    steps, seconds, losses = 0, 0.0, []
    for epoch in range(epochs):
        it = batches(xtr, ytr, batch_size, rng)
        n_batches = len(ytr) // batch_size
        bar = _progress(it, n_batches, f"{name} epoch {epoch + 1}/{epochs}", progress)
        running = None
        for xb, yb in bar:
            t0 = time.perf_counter()
            model, state, loss = step(model, state, xb, yb)
            dt = time.perf_counter() - t0
            if steps > 0:       # the first step traces and compiles
                seconds += dt
            steps += 1
            losses.append(float(loss))
            running = float(loss) if running is None else 0.9 * running + 0.1 * float(loss)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{running:.4f}")
    acc = accuracy(model, xte, yte, batch_size)
    rate = (steps - 1) / seconds if seconds else float("nan")
    print(f"{name}: test accuracy {acc * 100:.1f}% on {len(yte)} held-out digits, "
          f"{rate:.1f} steps/s (batch {batch_size}), final running loss {running:.4f}")
    return model, acc, losses


def _progress(it, total, desc, enabled):
    if not enabled:
        return it
    try:
        from tqdm import tqdm
    except ImportError:
        return it
    return tqdm(it, total=total, desc=desc, leave=True, ncols=90)
