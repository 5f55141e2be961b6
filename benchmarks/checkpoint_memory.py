"""Memory held between the forward and backward pass of a deep MLP, with and without
``tracejit.checkpoint`` on each block (8 residual blocks of two 256-unit layers, batch 128,
float32). Figures come from the compiled program's IR: the residuals of the forward/backward
split (what stays alive between the passes) and the liveness peak of the whole gradient program
run in order. Run: ``python -m benchmarks.checkpoint_memory``.
"""
from __future__ import annotations

import numpy as np

import tracejit as tj
from tracejit.autodiff import split_vjp, vjp_function
from tracejit.ir.passes.liveness import liveness

BLOCKS, WIDTH, BATCH = 8, 256, 128
MB = 2.0 ** 20


def init(seed=0):
    rng = np.random.default_rng(seed)
    scale = np.float32(1 / np.sqrt(WIDTH))
    params = [{k: (rng.standard_normal((WIDTH, WIDTH)) * scale).astype(np.float32)
               for k in ("w1", "w2")} for _ in range(BLOCKS)]
    return params, rng.standard_normal((BATCH, WIDTH)).astype(np.float32)


def block(p, h):
    return h + np.maximum(np.tanh(h @ p["w1"]) @ p["w2"], 0.0)


def make_loss(checkpointed: bool):
    step = tj.checkpoint(block) if checkpointed else block

    def loss(params, x):
        h = x
        for p in params:
            h = step(p, h)
        return np.mean(h * h)
    return loss


def measure(checkpointed: bool) -> dict:
    params, x = init()
    f = tj.make_ir(make_loss(checkpointed))(params, x)
    g = vjp_function(f, list(range(2 * BLOCKS)), [0])
    split = split_vjp(g, len(f.params), len(f.results))
    param_bytes = sum(p.type.size * p.type.dtype.np.itemsize for p in f.params)
    inputs = set(split.forward.params)
    activations = sum(v.type.size * v.type.dtype.np.itemsize for v in split.residuals
                      if v not in inputs)
    out = {"held between passes (activations)": activations / MB,
           "held between passes (incl. params)": split.residual_bytes / MB,
           "params": param_bytes / MB,
           "peak, gradient program in order": liveness(g).peak_bytes / MB}
    try:
        from tracejit.ir.passes import optimize
        out["peak, after optimize()"] = liveness(optimize(g)).peak_bytes / MB
    except ImportError:
        pass
    return out


def main() -> dict:
    results = {"no checkpoint": measure(False), "checkpoint each block": measure(True)}
    params, x = init()
    g0 = tj.grad(make_loss(False))(params, x)
    g1 = tj.grad(make_loss(True))(params, x)
    assert all(np.allclose(a[k], b[k], rtol=1e-4, atol=1e-6) for a, b in zip(g0, g1) for k in a)
    keys = list(results["no checkpoint"])
    print(f"{'MiB':36s}" + "".join(f"{k:>24s}" for k in results))
    for k in keys:
        print(f"{k:36s}" + "".join(f"{r[k]:24.2f}" for r in results.values()))
    return results


if __name__ == "__main__":
    main()
