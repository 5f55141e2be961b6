"""Per-example gradients with vmap: ``vmap(grad(loss), in_axes=(None, 0, 0))`` of a small MLP
(float32, batch 128, 64 -> 128 tanh -> 10, squared error), against a hand-written NumPy
version (einsum over the batch), a Python loop of tracejit's jitted grad, and jax.vmap or
torch.func.vmap where installed. First call (trace and compile, untiered, in this process: run
with an empty TRACEJIT_CACHE_DIR for a cold one) and the median call, side by side in one run
(``timing.compare``).

    TRACEJIT_CACHE_DIR=$(mktemp -d) python -m benchmarks vmap
"""
from __future__ import annotations

import time

import numpy as np

from .timing import compare

B, D, H, O = 128, 64, 128, 10


def data():
    rng = np.random.default_rng(0)
    f32 = np.float32
    p = {"W1": (rng.standard_normal((D, H)) / np.sqrt(D)).astype(f32), "b1": np.zeros(H, f32),
         "W2": (rng.standard_normal((H, O)) / np.sqrt(H)).astype(f32), "b2": np.zeros(O, f32)}
    return p, rng.standard_normal((B, D)).astype(f32), rng.standard_normal((B, O)).astype(f32)


def loss(p, x, y):
    h = np.tanh(x @ p["W1"] + p["b1"])
    e = h @ p["W2"] + p["b2"] - y
    return 0.5 * (e * e).sum()


def numpy_per_example(p, x, y):
    h = np.tanh(x @ p["W1"] + p["b1"])
    dout = h @ p["W2"] + p["b2"] - y
    dh = (dout @ p["W2"].T) * (1 - h * h)
    return {"W1": np.einsum("bi,bj->bij", x, dh), "b1": dh,
            "W2": np.einsum("bi,bj->bij", h, dout), "b2": dout}


def _first(make, *args):
    t = time.perf_counter()
    fn = make()
    fn(*args)
    return fn, time.perf_counter() - t


def main():
    import tracejit
    p, x, y = data()
    want = numpy_per_example(p, x, y)
    fns, first = {"numpy (hand-written)": lambda: numpy_per_example(p, x, y)}, {}

    per_ex, first["tracejit vmap"] = _first(
        lambda: tracejit.jit(tracejit.vmap(tracejit.grad(loss), in_axes=(None, 0, 0)),
                             tiered=False), p, x, y)
    got = per_ex(p, x, y)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-4, atol=2e-5)
    fns["tracejit vmap"] = lambda: per_ex(p, x, y)
    one, first["tracejit grad, loop"] = _first(
        lambda: tracejit.jit(tracejit.grad(loss), tiered=False), p, x[0], y[0])
    fns["tracejit grad, loop"] = lambda: [one(p, x[i], y[i]) for i in range(B)]
    try:
        import jax
        jax.config.update("jax_platforms", "cpu")
        jp = jax.tree_util.tree_map(jax.numpy.asarray, p)
        jl = jax.jit(jax.vmap(jax.grad(lambda p, x, y: 0.5 * ((jax.numpy.tanh(
            x @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"] - y) ** 2).sum()), in_axes=(None, 0, 0)))
        jfn, first["jax vmap"] = _first(lambda: (lambda *a: jax.block_until_ready(jl(*a))),
                                        jp, x, y)
        fns["jax vmap"] = lambda: jfn(jp, x, y)
    except ImportError:
        pass
    try:
        import torch
        from torch.func import grad, vmap
        tp = {k: torch.from_numpy(v) for k, v in p.items()}
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        tl = vmap(grad(lambda p, x, y: 0.5 * ((torch.tanh(x @ p["W1"] + p["b1"]) @ p["W2"]
                                                + p["b2"] - y) ** 2).sum()), in_dims=(None, 0, 0))
        tfn, first["torch.func vmap"] = _first(lambda: tl, tp, tx, ty)
        fns["torch.func vmap"] = lambda: tfn(tp, tx, ty)
    except ImportError:
        pass
    times = compare(fns, repeat=30)
    base = times["numpy (hand-written)"]
    print(f"per-example gradients, MLP {D}->{H}->{O}, batch {B}, float32")
    print(f"{'':24}{'first call s':>14}{'median ms':>12}{'vs numpy':>10}")
    for name, t in times.items():
        f = f"{first[name]:.2f}" if name in first else "-"
        print(f"{name:24}{f:>14}{t * 1e3:>12.3f}{t / base:>10.2f}")


if __name__ == "__main__":
    main()
