"""The seed CNN on the digits in float32 and under float16 autocast with GradScaler (issue #16's
target: the same test accuracy, within 1 point). Run: ``python -m benchmarks amp_digits``
(``python -m benchmarks.amp_digits --epochs 5 --backend numpy`` for other settings).

All runs use the same initial weights, the same shuffles and one training-step function
(``jit``, untiered: value_and_grad of the scaled loss, unscale, the Adam step selected away
when a gradient is inf/NaN, the scaler's update); without GradScaler its scaler is disabled,
so it scales by 1 and never skips. Under autocast the convolutions' and linear layers'
matmuls run in float16 (inputs converted, float32 accumulation), the softmax and the loss in
float32; the weights, gradients and Adam state stay float32. Accuracy is measured with the
forward pass the model was trained with (autocast for the float16 models) on the held-out
digits; step times are timing.compare's medians of each trained step function on one batch,
taking turns.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tracejit as tj
from tracejit import optim
from tracejit.amp import GradScaler, autocast
from tracejit.demo.data import batches, load_digits_28
from tracejit.demo.models import SimpleCNN
from tracejit.nn import functional as F

from .timing import compare


# (name, autocast, GradScaler): float16 without the scaler shows what autocast alone costs
CONFIGS = [("float32", False, False), ("float16 autocast", True, False),
           ("float16 autocast + GradScaler", True, True)]


def make_step(opt, scaler, amp: bool, backend: str):
    loss_fn = autocast(lambda m, x, y: F.cross_entropy(m(x), y), enabled=amp)

    def step(model, opt_state, scaler_state, x, y):
        scaled, grads = tj.value_and_grad(
            lambda m: scaler.scale(loss_fn(m, x, y), scaler_state))(model)
        grads, found_inf = scaler.unscale(grads, scaler_state)
        model, opt_state = scaler.step(opt, grads, opt_state, model, found_inf)
        return (model, opt_state, scaler.update(scaler_state, found_inf),
                scaled / scaler_state["scale"], found_inf)

    return tj.jit(step, backend=backend, tiered=False)


def make_predict(amp: bool, backend: str):
    forward = autocast(lambda m, x: m(x), enabled=amp)
    return tj.jit(lambda m, x: np.argmax(forward(m, x), axis=1), backend=backend, tiered=False)


def run(amp: bool, scale: bool, data, epochs: int, batch_size: int, backend: str,
        seed: int = 0) -> dict:
    (xtr, ytr), (xte, yte) = data
    model = SimpleCNN(rng=np.random.default_rng(seed))
    opt, scaler = optim.Adam(lr=1e-3), GradScaler(enabled=scale)
    opt_state, scaler_state = opt.init(model), scaler.init()
    step = make_step(opt, scaler, amp, backend)
    rng = np.random.default_rng(seed + 1)
    losses, skipped, t0 = [], 0, time.perf_counter()
    for _ in range(epochs):
        for xb, yb in batches(xtr, ytr, batch_size, rng):
            model, opt_state, scaler_state, loss, found_inf = step(model, opt_state,
                                                                   scaler_state, xb, yb)
            losses.append(float(loss))
            skipped += bool(found_inf)
            if len(losses) == 1:
                first, t0 = time.perf_counter() - t0, time.perf_counter()
    seconds = time.perf_counter() - t0
    predict = make_predict(amp, backend)
    correct = sum(int((predict(model, xte[i:i + batch_size]) == yte[i:i + batch_size]).sum())
                  for i in range(0, len(yte), batch_size))
    args = (model, opt_state, scaler_state, xtr[:batch_size], ytr[:batch_size])
    return {"accuracy": correct / len(yte), "loss": float(np.mean(losses[-20:])),
            "train_s": seconds, "first_s": first, "skipped": skipped,
            "scale": float(scaler_state["scale"]), "steps": len(losses),
            "step": lambda: step(*args)}


def main(epochs: int = 3, batch_size: int = 32, backend: str = "numba") -> dict:
    data = load_digits_28()
    print(f"SimpleCNN on the digits ({len(data[0][1])} train, {len(data[1][1])} test, "
          f"1x28x28), Adam 1e-3, batch {batch_size}, {epochs} epochs, backend "
          f"{backend!r}")
    results = {}
    for name, amp, scale in CONFIGS:
        results[name] = r = run(amp, scale, data, epochs, batch_size, backend)
        print(f"  {name:30} test accuracy {r['accuracy'] * 100:5.1f}%  loss {r['loss']:.4f}  "
              f"skipped {r['skipped']}  scale {r['scale']:g}  ({r['steps']} steps in "
              f"{r['train_s']:.0f} s after a first of {r['first_s']:.1f} s)", flush=True)
    step_s = compare({name: r["step"] for name, r in results.items()})
    print("  step time (median of interleaved calls on one batch, timing.compare):")
    for name, seconds in step_s.items():
        results[name]["step_ms"] = seconds * 1e3
        print(f"  {name:30} {seconds * 1e3:7.1f} ms")
    first, last = results[CONFIGS[0][0]], results[CONFIGS[-1][0]]
    print(f"  accuracy difference {abs(last['accuracy'] - first['accuracy']) * 100:.1f} points "
          f"(target: within 1); step time float32 / float16 = "
          f"{first['step_ms'] / last['step_ms']:.2f}x")
    return results


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--backend", default="numba", choices=["numba", "numpy"])
    a = ap.parse_args()
    main(a.epochs, a.batch_size, a.backend)
