"""Loops in the IR against loops unrolled into the trace: an RNN training step (float32,
hidden 256, batch 32, inputs and outputs 64, SGD) over a sequence, written with
``tracejit.scan`` and with a Python ``for`` loop, and with ``jax.lax.scan`` when JAX is
installed (and JAX's unrolled loop, up to 100 steps). Each case runs in a fresh process with an
empty kernel cache:

    python -m benchmarks control_flow              # 100 steps; also 25 and 400, untiered
    python -m benchmarks.control_flow 100 200      # other sequence lengths

Columns: first call (seconds, wall clock: tracing, passes and compiling when untiered; the
NumPy first tier when tiered), when the compiled tier is in use (stepping back to back), IR
ops in the traced step, the first loss. Then the compiled steps timed side by side in one
process (``timing.compare``): the step times to quote, since a fresh process's steps run
beside its background compiles.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

H, B, D, O = 256, 32, 64, 64
LR = 0.01


def data(steps: int):
    """Parameters, inputs and targets, the same in every process."""
    import numpy as np
    rng = np.random.default_rng(0)
    f32 = np.float32
    p = {"Wx": (rng.standard_normal((D, H)) / np.sqrt(D)).astype(f32),
         "Wh": (rng.standard_normal((H, H)) / np.sqrt(H)).astype(f32),
         "b": np.zeros(H, f32),
         "Wy": (rng.standard_normal((H, O)) / np.sqrt(H)).astype(f32)}
    xs = rng.standard_normal((steps, B, D)).astype(f32)
    ys = rng.standard_normal((steps, B, O)).astype(f32)
    return p, xs, ys


def tracejit_step(mode: str, steps: int):
    """The training step (not jitted), its loop a ``scan`` or unrolled by Python."""
    import numpy as np
    import tracejit as tj

    def loss_fn(p, xs, ys):
        def cell(h, x):
            h = np.tanh(x @ p["Wx"] + h @ p["Wh"] + p["b"])
            return h, h
        h0 = np.zeros((B, H), np.float32)
        if mode == "scan":
            _, hs = tj.scan(cell, h0, xs)
        else:
            h, out = h0, []
            for t in range(steps):
                h, y = cell(h, xs[t])
                out.append(y)
            hs = np.stack(out)
        return np.mean((hs @ p["Wy"] - ys) ** 2)

    def train_step(p, xs, ys):
        loss, g = tj.value_and_grad(loss_fn)(p, xs, ys)
        return loss, {k: p[k] - LR * g[k] for k in p}
    return train_step


def jax_step(unrolled: bool = False):
    """The same step with jax.lax.scan (or a Python loop), jitted (None without JAX)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None

    def loss_fn(p, xs, ys):
        def cell(h, x):
            h = jnp.tanh(x @ p["Wx"] + h @ p["Wh"] + p["b"])
            return h, h
        h0 = jnp.zeros((B, H), jnp.float32)
        if unrolled:
            h, out = h0, []
            for t in range(xs.shape[0]):
                h, y = cell(h, xs[t])
                out.append(y)
            hs = jnp.stack(out)
        else:
            _, hs = jax.lax.scan(cell, h0, xs)
        return jnp.mean((hs @ p["Wy"] - ys) ** 2)

    @jax.jit
    def step(p, xs, ys):
        loss, g = jax.value_and_grad(loss_fn)(p, xs, ys)
        return loss, {k: p[k] - LR * g[k] for k in p}
    return lambda *args: jax.block_until_ready(step(*args))


def first_call(mode: str, steps: int, tiered: bool) -> dict:
    """In a fresh process: the first call, and when the compiled tier is in use."""
    args = data(steps)
    if mode.startswith("jax"):
        run, ops = jax_step(unrolled=mode == "jax_unrolled"), None
    else:
        import tracejit as tj
        fn = tracejit_step(mode, steps)
        jitted = tj.jit(fn, tiered=tiered)
        run = jitted
    t = time.perf_counter()
    loss = float(run(*args)[0])
    first = time.perf_counter() - t
    if tiered:
        while jitted.stats()[0]["tier"] != "compiled" and time.perf_counter() - t < 300:
            run(*args)
    compiled_at = time.perf_counter() - t
    if not mode.startswith("jax"):
        ops = len(tj.make_ir(fn)(*args).ops)
    return {"first": first, "compiled_at": compiled_at, "ops": ops, "loss": loss}


def side_by_side(steps: int) -> dict:
    """Median ms of a compiled step of each, taking turns in this process."""
    import tracejit as tj
    from benchmarks.timing import compare
    args = data(steps)
    fns = {m: tj.jit(tracejit_step(m, steps), tiered=False) for m in ("scan", "unrolled")}
    fns = {m: (lambda f=f: f(*args)) for m, f in fns.items()}
    jax = jax_step()
    if jax is not None:
        fns["jax_scan"] = lambda: jax(*args)
    for f in fns.values():
        f()
    return {k: v * 1e3 for k, v in compare(fns, repeat=30, rounds=5).items()}


def _child(what: str, *argv) -> dict | None:
    """Run ``what`` of this module in a fresh process with an empty kernel cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRACEJIT_CACHE_DIR=cache,
                   PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("TRACEJIT_TIERED", None)
        code = (f"import json, benchmarks.control_flow as b; "
                f"print(json.dumps(b.{what}(*{argv!r})))")
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True)
    if proc.returncode != 0:
        print(f"  {what}{argv}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None):
    argv = sys.argv[1:] if argv is None else argv
    lengths = [int(a) for a in argv] or [100]
    jax = jax_step() is not None
    cases = []
    for n in lengths:
        cases += [("scan", n, False), ("unrolled", n, False)]
        cases += [("jax_scan", n, False), ("jax_unrolled", n, False)] if jax and n <= 100 else []
        cases += [("scan", n, True), ("unrolled", n, True)]
    if not argv:
        cases += [(m, n, False) for n in (25, 400) for m in ("scan", "unrolled")]
    print(f"RNN training step, float32, hidden {H}, batch {B}, in/out {D}/{O}; each case in a "
          "fresh process with an empty kernel cache")
    print("| case | steps | tiers | first call s | compiled tier in use s | IR ops | loss |")
    print("|---|---|---|---|---|---|---|")
    rows = {}
    for mode, n, tiered in cases:
        r = _child("first_call", mode, n, tiered)
        if r is None:
            continue
        rows[mode, n, tiered] = r
        print(f"| {mode} | {n} | {'tiered' if tiered else 'untiered'} | {r['first']:.2f} | "
              f"{r['compiled_at']:.2f} | {r['ops'] if r['ops'] is not None else '-'} | "
              f"{r['loss']:.6f} |", flush=True)
    for n in sorted({n for _, n, _ in cases}):
        s, u = rows.get(("scan", n, False)), rows.get(("unrolled", n, False))
        if s and u:
            print(f"steps {n}, untiered: scan's first call (trace + compile) "
                  f"{u['first'] / s['first']:.1f}x faster than unrolled's")
        s, u = rows.get(("jax_scan", n, False)), rows.get(("jax_unrolled", n, False))
        if s and u:
            print(f"steps {n}: jax.lax.scan's first call {u['first'] / s['first']:.1f}x faster "
                  "than jax.jit's of the unrolled loop")
        s, u = rows.get(("scan", n, True)), rows.get(("unrolled", n, True))
        if s and u:
            print(f"steps {n}, tiered: first call {u['first'] / s['first']:.1f}x faster; "
                  f"compiled tier in use {u['compiled_at'] / s['compiled_at']:.1f}x sooner")
    for n in lengths:
        r = _child("side_by_side", n)
        if r:
            print(f"steps {n}, compiled step side by side in one process (medians, ms): "
                  + ", ".join(f"{k} {v:.2f}" for k, v in r.items())
                  + f"; scan {r['unrolled'] / r['scan']:.2f}x unrolled's speed")


if __name__ == "__main__":
    main()
