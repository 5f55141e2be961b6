"""MLP training step (784-512-512-10, ReLU, softmax cross-entropy, batch 128, float32, SGD):
``jit`` of value_and_grad plus the update, beside the same step written by hand in NumPy (and
PyTorch eager and jax.jit when installed). Run: ``python -m benchmarks.train_step``, or with
``--contended`` while another process keeps one core busy.
"""
from __future__ import annotations

import sys

import numpy as np

import tracejit as tj

from .timing import compare

SIZES, BATCH, LR = (784, 512, 512, 10), 128, 0.01


def init(seed=0):
    rng = np.random.default_rng(seed)
    params = {}
    for i, (a, b) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        params[f"w{i}"] = (rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32)
        params[f"b{i}"] = np.zeros(b, np.float32)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    return params, x, y


def loss_fn(p, x, y):
    h = np.maximum(x @ p["w0"] + p["b0"], 0.0)
    h = np.maximum(h @ p["w1"] + p["b1"], 0.0)
    logits = h @ p["w2"] + p["b2"]
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    return -logp[np.arange(x.shape[0]), y].mean()


@tj.jit
def tracejit_step(p, x, y):
    loss, g = tj.value_and_grad(loss_fn)(p, x, y)
    return loss, {k: p[k] - LR * g[k] for k in p}


def numpy_step(p, x, y):
    """Forward and backward by hand."""
    z0 = x @ p["w0"] + p["b0"]
    h0 = np.maximum(z0, 0)
    z1 = h0 @ p["w1"] + p["b1"]
    h1 = np.maximum(z1, 0)
    logits = h1 @ p["w2"] + p["b2"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob = e / e.sum(axis=1, keepdims=True)
    n = x.shape[0]
    loss = -np.log(prob[np.arange(n), y]).mean()
    d = prob
    d[np.arange(n), y] -= 1
    d /= n
    g = {"w2": h1.T @ d, "b2": d.sum(0)}
    d = (d @ p["w2"].T) * (z1 > 0)
    g["w1"], g["b1"] = h0.T @ d, d.sum(0)
    d = (d @ p["w1"].T) * (z0 > 0)
    g["w0"], g["b0"] = x.T @ d, d.sum(0)
    return loss, {k: p[k] - LR * g[k] for k in p}


def jax_step():
    """The same step under jax.jit (loss_fn written once more on jax.numpy)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None

    def loss(p, x, y):
        h = jnp.maximum(x @ p["w0"] + p["b0"], 0.0)
        h = jnp.maximum(h @ p["w1"] + p["b1"], 0.0)
        logp = jax.nn.log_softmax(h @ p["w2"] + p["b2"], axis=1)
        return -logp[jnp.arange(x.shape[0]), y].mean()

    @jax.jit
    def step(p, x, y):
        value, g = jax.value_and_grad(loss)(p, x, y)
        return value, {k: p[k] - LR * g[k] for k in p}
    p, x, y = init()
    p, x, y = {k: jnp.asarray(v) for k, v in p.items()}, jnp.asarray(x), jnp.asarray(y)
    return lambda: jax.block_until_ready(step(p, x, y))


def numpy_gemms(p, x):
    """Only the step's eight matrix products (no gradient for the input), as NumPy runs them:
    what any implementation calling the same BLAS spends at least."""
    h0 = x @ p["w0"]
    h1 = h0 @ p["w1"]
    d2 = h1 @ p["w2"]
    d1 = d2 @ p["w2"].T
    g1 = h0.T @ d1
    d0 = d1 @ p["w1"].T
    g0 = x.T @ d0
    return h1.T @ d2, g1, g0


def torch_step():
    try:
        import torch
    except ImportError:
        return None
    p, x, y = init()
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
    tx, ty = torch.tensor(x), torch.tensor(y)

    def step():
        h = torch.relu(tx @ tp["w0"] + tp["b0"])
        h = torch.relu(h @ tp["w1"] + tp["b1"])
        loss = torch.nn.functional.cross_entropy(h @ tp["w2"] + tp["b2"], ty)
        for v in tp.values():
            v.grad = None
        loss.backward()
        with torch.no_grad():
            for v in tp.values():
                v -= LR * v.grad
        return loss
    return step


def main(repeat: int = 50) -> dict:
    p, x, y = init()
    loss_t, new_t = tracejit_step(p, x, y)
    loss_n, new_n = numpy_step(p, x, y)
    assert np.allclose(loss_t, loss_n, rtol=1e-4), (loss_t, loss_n)
    for k in p:
        assert np.allclose(new_t[k], new_n[k], rtol=1e-3, atol=1e-6), k
    fns = {"numpy by hand": lambda: numpy_step(p, x, y),
           "tracejit jit(value_and_grad)+SGD": lambda: tracejit_step(p, x, y)}
    step = torch_step()
    if step is not None:
        fns["pytorch eager"] = step
    step = jax_step()
    if step is not None:
        fns["jax.jit"] = step
    fns["numpy: the matmuls alone"] = lambda: numpy_gemms(p, x)
    results = {k: v * 1e3 for k, v in compare(fns, repeat).items()}
    base = results["numpy by hand"]
    for name, ms in results.items():
        print(f"{name:36s} {ms:8.3f} ms   ({base / ms:5.2f}x vs NumPy by hand)")
    print(f"(a step 1.3x faster than NumPy by hand takes <= {base / 1.3:.3f} ms)")
    return results


def contended(repeat: int = 50) -> dict:
    """The same table while another process keeps one core busy (a shared machine)."""
    from .compile import busy_core
    with busy_core():
        print("-- with one core kept busy by another process")
        return main(repeat)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--contended"]
    (contended if "--contended" in sys.argv else main)(int(args[0]) if args else 50)
