"""``jit(f, remat="auto")`` against ``remat="none"`` on three training steps: the MLP step
(benchmarks/train_step.py), the seed CNN step (SimpleCNN, Adam, batch 32) and the residual
tanh/ReLU MLP of checkpoint_memory.py (8 blocks, width 256, batch 128). Per step: values
recomputed, the arena's bytes and its peak of live intermediates (the plan's, before and
after), the activations (intermediates held idle between their uses: what the forward pass
keeps for the backward pass; remat.peaks), the compiled step time side by side
(timing.compare) and whether every result and gradient is bit-identical. Run: ``python -m benchmarks.remat``.
"""
from __future__ import annotations

import numpy as np

import tracejit as tj
from tracejit.tracer.pytree import flatten

from . import checkpoint_memory, train_step
from .timing import compare

MB = 2.0 ** 20


def mlp_case():
    p, x, y = train_step.init()

    def step(p, x, y):
        loss, g = tj.value_and_grad(train_step.loss_fn)(p, x, y)
        return loss, {k: p[k] - train_step.LR * g[k] for k in p}
    return step, (p, x, y)


def cnn_case():
    """The demo's step (tracejit/demo/train.py make_train_step), built here to pass ``remat``."""
    from tracejit import optim
    from tracejit.demo.models import SimpleCNN
    from tracejit.demo.train import cross_entropy_loss
    rng = np.random.default_rng(0)
    model, opt = SimpleCNN(rng=np.random.default_rng(0)), optim.Adam(lr=1e-3)
    state = opt.init(model)
    x = rng.standard_normal((32, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 32)

    def step(model, opt_state, x, y):
        loss, grads = tj.value_and_grad(cross_entropy_loss)(model, x, y)
        model, opt_state = opt.update(grads, opt_state, model)
        return model, opt_state, loss
    return step, (model, state, x, y)


def residual_case():
    params, x = checkpoint_memory.init()
    loss = checkpoint_memory.make_loss(False)
    return (lambda params, x: tj.value_and_grad(loss)(params, x)), (params, x)


CASES = {"MLP step": mlp_case, "CNN step": cnn_case, "residual tanh MLP": residual_case}


def measure(case, timed: bool = True) -> dict:
    step, args = case()
    none, auto = (tj.jit(step, tiered=False, remat=r) for r in ("none", "auto"))
    lo_none, lo_auto = none.lower(*args), auto.lower(*args)
    arena = {k: next(r for r in lo.passes if r.name == "arena").details
             for k, lo in (("none", lo_none), ("auto", lo_auto))}
    rec = next(r for r in lo_auto.passes if r.name == "remat").details
    same = all(np.array_equal(a, b) for a, b in zip(flatten(none(*args))[0],
                                                     flatten(auto(*args))[0]))
    out = {"recomputed": rec["values_recomputed"],
           "arena none MiB": arena["none"]["arena_bytes"] / MB,
           "arena auto MiB": arena["auto"]["arena_bytes"] / MB,
           "intermediates peak none MiB": rec["peak_before"] / MB,
           "intermediates peak auto MiB": rec["peak_after"] / MB,
           "activations none MiB": rec["activations_before"] / MB,
           "activations auto MiB": rec["activations_after"] / MB,
           "bit-identical": same}
    if timed:
        t = compare({"none": lambda: none(*args), "auto": lambda: auto(*args)})
        out["step ms none"], out["step ms auto"] = t["none"] * 1e3, t["auto"] * 1e3
    return out


def main(timed: bool = True) -> dict:
    results = {name: measure(case, timed) for name, case in CASES.items()}
    keys = list(next(iter(results.values())))
    print(f"{'':30s}" + "".join(f"{k:>20s}" for k in results))
    for k in keys:
        cells = [r[k] for r in results.values()]
        print(f"{k:30s}" + "".join(f"{c:20.2f}" if isinstance(c, float) else f"{c!s:>20s}"
                                   for c in cells))
    return results


if __name__ == "__main__":
    main()
