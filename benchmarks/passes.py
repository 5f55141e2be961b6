"""How many ops each pass removes from the MLP and CNN training steps (forward, backward and
update in one Function), read from ``jit(step).lower(...).passes``; once with every simplify
pattern and once without those added for autodiff output (algebra.py and the broadcast/reshape
pairs), to show what they do. Then how often those fire over the differential suite's cases
and their gradients. Run: ``python -m benchmarks passes``. Nothing is compiled.
"""
from __future__ import annotations

import numpy as np

import tracejit as tj
from tracejit import optim
from tracejit.demo.models import SimpleCNN
from tracejit.demo.train import make_train_step
from tracejit.ir.passes.patterns import without_patterns

from . import train_step
from .differential import _suite

NEW_PATTERNS = ("mul-one", "div-one", "add-zero", "sub-zero", "double-neg", "where-same",
                "where-constant", "convert-round-trip", "convert-chain", "reduce-unit-axes",
                "reduce-of-broadcast", "broadcast-of-reshape", "reshape-of-broadcast")
PASSES = ("inline", "simplify", "fold", "cse", "dce")


def mlp_step():
    p, x, y = train_step.init()
    return tj.jit(train_step.tracejit_step.fn, backend="numpy"), (p, x, y)


def cnn_step(batch=32):
    model = SimpleCNN(rng=np.random.default_rng(0))
    opt = optim.Adam(lr=1e-3)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    return tj.jit(make_train_step(opt).fn, backend="numpy"), (model, opt.init(model), x, y)


def pass_table(step, args, new_patterns: bool = True) -> dict:
    """Ops removed by each pass (net, summed over rounds, top-level Function), the op counts
    traced -> optimized -> fused, and the patterns that fired."""
    def passes():
        step.clear_cache()
        return step.lower(*args).passes
    if new_patterns:
        log = passes()
    else:
        with without_patterns(*NEW_PATTERNS):
            log = passes()
    main = log[0].function
    fired: dict = {}
    for r in log:
        if r.name == "simplify" and r.function == main:
            for k, n in r.details["patterns"].items():
                fired[k] = fired.get(k, 0) + n
    fuse = next(r for r in log if r.name == "fuse")
    return {"traced": log[0].ops_before, "optimized": fuse.ops_before, "fused": fuse.ops_after,
            "removed": log.removed_by_pass(main), "patterns": fired,
            "groups": fuse.details["groups"],
            "rounds": max(r.round or 0 for r in log if r.function == main)}


def _float_sum(fn):
    """The sum of ``fn``'s float results, to take a gradient of."""
    def loss(*args):
        out = fn(*args)
        total = 0.0
        for leaf in out if isinstance(out, (tuple, list)) else (out,):
            if getattr(leaf, "dtype", None) is not None and leaf.dtype.kind == "f":
                total = total + leaf.sum()
        return total
    return loss


def suite_census() -> dict:
    """The new patterns fired while optimizing each differential-suite case (first dtype) and
    the gradient of the sum of its float results with respect to its float arguments."""
    fired = {"forward": {}, "gradient": {}}
    for case in _suite().CASES:
        args = case.make(case.dtypes[0], np.random.default_rng(0))
        floats = tuple(i for i, a in enumerate(args)
                       if isinstance(a, np.ndarray) and a.dtype.kind == "f")
        programs = {"forward": case.fn}
        if floats:
            programs["gradient"] = tj.grad(_float_sum(case.fn), argnums=floats)
        for kind, fn in programs.items():
            try:
                log = tj.jit(fn, backend="numpy").lower(*args).passes
            except Exception:         # a case that does not trace or differentiate
                continue
            for r in log:
                for k, n in (r.details.get("patterns") or {}).items():
                    if k in NEW_PATTERNS:
                        fired[kind][k] = fired[kind].get(k, 0) + n
    return fired


def main():
    rows = []
    for name, (step, args) in (("MLP step", mlp_step()), ("CNN step", cnn_step())):
        for new in (False, True):
            t = pass_table(step, args, new)
            rows.append((name, new, t))
    print(f"{'':10} {'patterns':9} {'traced':>6} " + " ".join(f"{p:>8}" for p in PASSES)
          + f" {'optimized':>9} {'groups':>6} {'rounds':>6}")
    for name, new, t in rows:
        print(f"{name:10} {'new' if new else 'old':9} {t['traced']:>6} "
              + " ".join(f"{t['removed'].get(p, 0):>8}" for p in PASSES)
              + f" {t['optimized']:>9} {t['groups']:>6} {t['rounds']:>6}")
        print(f"{'':10} {'':9} patterns: {t['patterns']}")
    for kind, fired in suite_census().items():
        print(f"differential suite, {kind}: {dict(sorted(fired.items(), key=lambda kv: -kv[1]))}")


if __name__ == "__main__":
    main()
