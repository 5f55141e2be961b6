"""Loops in the IR against loops unrolled into the trace: an RNN training step (float32,
hidden 256, batch 32, inputs and outputs 64, SGD) over a sequence, written with
``tracejit.scan`` and with a Python ``for`` loop, and with ``jax.lax.scan`` when JAX is
installed. Each case runs in a fresh process with an empty kernel cache, untiered, so that its
first call is trace plus compile:

    python -m benchmarks control_flow              # steps 100; scan also at 25 and 400
    python -m benchmarks.control_flow 100 200      # other sequence lengths

Columns: first call (seconds, wall clock: tracing, passes and compiling when untiered; the
NumPy first tier when tiered), when the compiled tier is in use (stepping back to back), a
step's median (ms) in that process, IR ops in the traced step. Then the compiled steps timed
side by side in one process (the ratio to quote: separate processes differ by 10-20 %).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

H, B, D, O = 256, 32, 64, 64
LR = 0.01

_CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np
mode, T = sys.argv[1], int(sys.argv[2])
H, B, D, O, LR = %(H)d, %(B)d, %(D)d, %(O)d, %(LR)r
rng = np.random.default_rng(0)
f32 = np.float32
p = {"Wx": (rng.standard_normal((D, H)) / np.sqrt(D)).astype(f32),
     "Wh": (rng.standard_normal((H, H)) / np.sqrt(H)).astype(f32),
     "b": np.zeros(H, f32),
     "Wy": (rng.standard_normal((H, O)) / np.sqrt(H)).astype(f32)}
xs = rng.standard_normal((T, B, D)).astype(f32)
ys = rng.standard_normal((T, B, O)).astype(f32)
ops = None
if mode.startswith("jax"):
    import jax, jax.numpy as jnp
    def loss_fn(p, xs, ys):
        def cell(h, x):
            h = jnp.tanh(x @ p["Wx"] + h @ p["Wh"] + p["b"])
            return h, h
        _, hs = jax.lax.scan(cell, jnp.zeros((B, H), f32), xs)
        return jnp.mean((hs @ p["Wy"] - ys) ** 2)
    @jax.jit
    def step(p, xs, ys):
        loss, g = jax.value_and_grad(loss_fn)(p, xs, ys)
        return loss, {k: p[k] - LR * g[k] for k in p}
    run = lambda: jax.block_until_ready(step(p, xs, ys))
else:
    import tracejit as tj
    def loss_fn(p, xs, ys):
        def cell(h, x):
            h = np.tanh(x @ p["Wx"] + h @ p["Wh"] + p["b"])
            return h, h
        h0 = np.zeros((B, H), f32)
        if mode == "scan":
            _, hs = tj.scan(cell, h0, xs)
        else:
            h, out = h0, []
            for t in range(T):
                h, y = cell(h, xs[t])
                out.append(y)
            hs = np.stack(out)
        return np.mean((hs @ p["Wy"] - ys) ** 2)
    def train_step(p, xs, ys):
        loss, g = tj.value_and_grad(loss_fn)(p, xs, ys)
        return loss, {k: p[k] - LR * g[k] for k in p}
    step = tj.jit(train_step, tiered=len(sys.argv) > 3)
    run = lambda: step(p, xs, ys)
imported = time.perf_counter() - t0
t = time.perf_counter(); loss0 = float(run()[0]); first = time.perf_counter() - t
compiled_at = None
if len(sys.argv) > 3:
    # tiered (the default): the first call ran on the NumPy tier while kernels compile; step
    # back to back until the compiled tier is in use
    while step.stats()[0]["tier"] != "compiled" and time.perf_counter() - t < 300:
        run()
    compiled_at = time.perf_counter() - t
if not mode.startswith("jax"):
    ops = len(tj.make_ir(train_step)(p, xs, ys).ops)
times = []
for _ in range(15):
    t = time.perf_counter(); run(); times.append(time.perf_counter() - t)
times.sort()
print(json.dumps({"first": first, "step_ms": times[len(times) // 2] * 1e3, "ops": ops,
                  "loss": loss0, "import": imported, "compiled_at": compiled_at}))
''' % {"H": H, "B": B, "D": D, "O": O, "LR": LR}


# Step times side by side in one process (timing.compare: the implementations take turns).
_COMPARE = r'''
import json, sys
import numpy as np
from benchmarks.timing import compare
T = int(sys.argv[1])
H, B, D, O, LR = %(H)d, %(B)d, %(D)d, %(O)d, %(LR)r
rng = np.random.default_rng(0)
f32 = np.float32
p = {"Wx": (rng.standard_normal((D, H)) / np.sqrt(D)).astype(f32),
     "Wh": (rng.standard_normal((H, H)) / np.sqrt(H)).astype(f32),
     "b": np.zeros(H, f32),
     "Wy": (rng.standard_normal((H, O)) / np.sqrt(H)).astype(f32)}
xs = rng.standard_normal((T, B, D)).astype(f32)
ys = rng.standard_normal((T, B, O)).astype(f32)
import tracejit as tj
def make(mode):
    def loss_fn(p, xs, ys):
        def cell(h, x):
            h = np.tanh(x @ p["Wx"] + h @ p["Wh"] + p["b"])
            return h, h
        h0 = np.zeros((B, H), f32)
        if mode == "scan":
            _, hs = tj.scan(cell, h0, xs)
        else:
            h, out = h0, []
            for t in range(T):
                h, y = cell(h, xs[t])
                out.append(y)
            hs = np.stack(out)
        return np.mean((hs @ p["Wy"] - ys) ** 2)
    def train_step(p, xs, ys):
        loss, g = tj.value_and_grad(loss_fn)(p, xs, ys)
        return loss, {k: p[k] - LR * g[k] for k in p}
    f = tj.jit(train_step, tiered=False)
    return lambda: f(p, xs, ys)
fns = {"scan": make("scan"), "unrolled": make("unrolled")}
try:
    import jax, jax.numpy as jnp
    def jloss(p, xs, ys):
        def cell(h, x):
            h = jnp.tanh(x @ p["Wx"] + h @ p["Wh"] + p["b"])
            return h, h
        _, hs = jax.lax.scan(cell, jnp.zeros((B, H), f32), xs)
        return jnp.mean((hs @ p["Wy"] - ys) ** 2)
    @jax.jit
    def jstep(p, xs, ys):
        loss, g = jax.value_and_grad(jloss)(p, xs, ys)
        return loss, {k: p[k] - LR * g[k] for k in p}
    fns["jax_scan"] = lambda: jax.block_until_ready(jstep(p, xs, ys))
except ImportError:
    pass
for f in fns.values():
    f()
print(json.dumps({k: v * 1e3 for k, v in compare(fns, repeat=30, rounds=5).items()}))
''' % {"H": H, "B": B, "D": D, "O": O, "LR": LR}


def compare_steps(steps: int) -> dict | None:
    env = dict(os.environ, TRACEJIT_TIERED="0",
               PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _COMPARE, str(steps)], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  side-by-side steps {steps}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_case(mode: str, steps: int, tiered: bool = False) -> dict | None:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRACEJIT_CACHE_DIR=cache,
                   PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("TRACEJIT_TIERED", None)
        argv = [mode, str(steps)] + (["tiered"] if tiered else [])
        proc = subprocess.run([sys.executable, "-c", _CHILD, *argv], env=env,
                              capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  {mode} {steps}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def have_jax() -> bool:
    try:
        import jax  # noqa: F401
        return True
    except ImportError:
        return False


def main(argv: list[str] | None = None):
    argv = sys.argv[1:] if argv is None else argv
    lengths = [int(a) for a in argv] or [100]
    cases = []
    for n in lengths:
        cases += [("scan", n, False), ("unrolled", n, False)]
        cases += [("jax_scan", n, False)] if have_jax() else []
        cases += [("scan", n, True), ("unrolled", n, True)]
    if not argv:
        cases += [("scan", 25, False), ("unrolled", 25, False), ("scan", 400, False),
                  ("unrolled", 400, False)]
    print(f"RNN training step, float32, hidden {H}, batch {B}, in/out {D}/{O}; each case in a "
          "fresh process with an empty kernel cache")
    print("| case | steps | tiers | first call s | compiled tier in use s | step ms | IR ops | "
          "loss |")
    print("|---|---|---|---|---|---|---|---|")
    rows = {}
    for mode, n, tiered in cases:
        r = run_case(mode, n, tiered)
        if r is None:
            continue
        rows[mode, n, tiered] = r
        at = r["compiled_at"] if tiered else r["first"]
        print(f"| {mode} | {n} | {'tiered' if tiered else 'untiered'} | {r['first']:.2f} | "
              f"{at:.2f} | {r['step_ms']:.2f} | {r['ops'] if r['ops'] is not None else '-'} | "
              f"{r['loss']:.6f} |", flush=True)
    for n in sorted({n for _, n, _ in cases}):
        s, u = rows.get(("scan", n, False)), rows.get(("unrolled", n, False))
        if s and u:
            print(f"steps {n}, untiered: scan's first call (trace + compile) "
                  f"{u['first'] / s['first']:.1f}x faster than unrolled's")
        s, u = rows.get(("scan", n, True)), rows.get(("unrolled", n, True))
        if s and u:
            print(f"steps {n}, tiered: first call {u['first'] / s['first']:.1f}x faster; "
                  f"compiled tier in use {u['compiled_at'] / s['compiled_at']:.1f}x sooner")
    for n in lengths:
        r = compare_steps(n)
        if r:
            print(f"steps {n}, compiled step side by side in one process (medians, ms): "
                  + ", ".join(f"{k} {v:.2f}" for k, v in r.items())
                  + f"; scan {r['unrolled'] / r['scan']:.2f}x unrolled's speed")


if __name__ == "__main__":
    main()
