"""First-call latency: how long until a new jitted function answers, and until it runs
compiled code. Each case runs in a fresh process, with an empty kernel cache (cold) and then
again with the cache it filled (warm), beside jax.jit's first call on the same function when
JAX is installed.

    python -m benchmarks compile            # chain, softmax, MLP step, CNN step
    python -m benchmarks.compile mlp cnn    # some of them
    python -m benchmarks.compile --contended mlp   # with the other core kept busy

Columns: first call (wall clock, tracing included; the NumPy first tier unless untiered),
time until the mixed tier (large kernels compiled, small groups on NumPy) and the compiled tier
are in use, a first-tier step and a mixed-tier step while kernels compile, a compiled step
(medians), NumPy eager on the same step where there is one, kernels and modules compiled, and
how many of them Numba compiled (the rest codegen/direct; TRACEJIT_DIRECT=0 for Numba alone).
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile

CASES = ("chain", "softmax", "mlp", "cnn")

# Runs in the fresh process: prints one JSON line.
_CHILD = r'''
import json, os, statistics, sys, time
t0 = time.perf_counter()
import numpy as np
import tracejit
from tracejit.codegen import cache
case = sys.argv[1]
rng = np.random.default_rng(0)
eager = None
if case == "chain":
    from benchmarks.backend import chain
    x = rng.standard_normal(10**6).astype(np.float32); y = rng.standard_normal(10**6).astype(np.float32)
    f = tracejit.jit(chain); args = (x, y); eager = lambda: chain(x, y)
elif case == "softmax":
    from benchmarks.backend import softmax
    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    f = tracejit.jit(softmax); args = (x,); eager = lambda: softmax(x)
elif case == "mlp":
    from benchmarks.train_step import init, loss_fn, numpy_step, LR
    p, x, y = init()
    def step(p, x, y):
        loss, g = tracejit.value_and_grad(loss_fn)(p, x, y)
        return loss, {k: p[k] - LR * g[k] for k in p}
    f = tracejit.jit(step); args = (p, x, y); eager = lambda: numpy_step(p, x, y)
elif case == "cnn":
    from tracejit import optim
    from tracejit.demo.models import SimpleCNN
    from tracejit.demo.train import make_train_step
    model = SimpleCNN(rng=np.random.default_rng(0)); opt = optim.Adam(lr=1e-3)
    state = opt.init(model)
    x = rng.standard_normal((32, 1, 28, 28)).astype(np.float32); y = rng.integers(0, 10, 32)
    f = make_train_step(opt); args = (model, state, x, y)
imported = time.perf_counter() - t0
t1 = time.perf_counter()
f(*args)
first = time.perf_counter() - t1
first_tier, mixed, mixed_at = [], [], None
while f.stats()[0]["tier"] != "compiled" and f.stats()[0]["calls"] is not None:
    if f.stats()[0]["compile_seconds"] is not None:
        break                                    # the compile failed
    tier = f.stats()[0]["tier"]
    if tier == "mixed" and mixed_at is None:
        mixed_at = time.perf_counter() - t1
    t = time.perf_counter(); f(*args)
    (mixed if tier == "mixed" else first_tier).append(time.perf_counter() - t)
    if len(first_tier) + len(mixed) >= 400:
        f.wait_compiled()
f.wait_compiled()
compiled_at = time.perf_counter() - t1
steps = []
for _ in range(20):
    t = time.perf_counter(); f(*args); steps.append(time.perf_counter() - t)
numpy_ms = None
if eager is not None:
    eager(); ts = []
    for _ in range(10):
        t = time.perf_counter(); eager(); ts.append(time.perf_counter() - t)
    numpy_ms = statistics.median(ts) * 1e3
st = cache.stats()
by_numba = sum(1 for mod in list(cache._MODULES.values())
               for d in cache._own_dispatchers(mod) if d.overloads)
print(json.dumps({"by_numba": by_numba,
                  "import": imported, "first": first, "compiled_at": compiled_at,
                  "mixed_at": mixed_at,
                  "mixed_ms": statistics.median(mixed) * 1e3 if mixed else None,
                  "first_tier_ms": statistics.median(first_tier) * 1e3 if first_tier else None,
                  "first_tier_calls": len(first_tier),
                  "step_ms": statistics.median(steps) * 1e3, "numpy_ms": numpy_ms,
                  "modules": st["modules"], "compiled": st["compiled"]}))
'''

_JAX_CHILD = r'''
import sys, time
t0 = time.perf_counter()
import numpy as np, jax, jax.numpy as jnp
case = sys.argv[1]
rng = np.random.default_rng(0)
if case == "chain":
    from benchmarks.backend import chain
    x = rng.standard_normal(10**6).astype(np.float32); y = rng.standard_normal(10**6).astype(np.float32)
    f = jax.jit(lambda x, y: chain(x, y, jnp)); args = (x, y)
elif case == "softmax":
    from benchmarks.backend import softmax
    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    f = jax.jit(lambda x: softmax(x, jnp)); args = (x,)
elif case == "mlp":
    from benchmarks.train_step import jax_step
    g = jax_step(); f = lambda: g(); args = ()
elif case == "cnn":
    from benchmarks.models import jax_cnn_step
    g = jax_cnn_step(); f = lambda: g(); args = ()
else:
    print("nan"); sys.exit(0)
t1 = time.perf_counter()
jax.block_until_ready(f(*args))
print(time.perf_counter() - t1)
'''


def _root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script: str, case: str, env: dict) -> str:
    out = subprocess.run([sys.executable, "-c", script, case], env=env, text=True,
                         capture_output=True, cwd=_root())
    if out.returncode != 0:
        raise RuntimeError(f"{case}: {out.stderr[-2000:]}")
    return out.stdout.strip().splitlines()[-1]


def _jax_first_call(case: str, env: dict) -> float | None:
    try:
        import jax  # noqa: F401
    except ImportError:
        return None
    try:
        v = float(_run(_JAX_CHILD, case, env))
    except RuntimeError:
        return None
    return None if v != v else v


def _busy(stop):
    while not stop.is_set():
        sum(i * i for i in range(10000))


@contextlib.contextmanager
def busy_core():
    """Another process keeping one core busy while the block runs (a shared machine)."""
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    busy = ctx.Process(target=_busy, args=(stop,), daemon=True)
    busy.start()
    try:
        yield
    finally:
        stop.set()
        busy.join(5)


def measure(case: str, tiered: bool, env: dict) -> dict:
    with tempfile.TemporaryDirectory() as d:
        e = dict(env, TRACEJIT_CACHE_DIR=d, TRACEJIT_TIERED="1" if tiered else "0",
                 PYTHONPATH=_root())
        cold = json.loads(_run(_CHILD, case, e))
        warm = json.loads(_run(_CHILD, case, e))
    return {"cold": cold, "warm": warm, "jax": _jax_first_call(case, env)}


def _fmt(v, unit="s", scale=1.0, width=8, digits=2):
    return f"{'-':>{width}}" if v is None else f"{v * scale:{width}.{digits}f}"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    contended = "--contended" in argv
    cases = [a for a in argv if a in CASES] or list(CASES)
    env = dict(os.environ)
    with contextlib.ExitStack() as stack:
        if contended:
            stack.enter_context(busy_core())
        return _table(cases, env, contended)


def _table(cases, env, contended):
    print("first-call latency, fresh processes (seconds; step columns in ms)"
          + (" -- with one core kept busy by another process" if contended else ""))
    print(f"{'case':8s} {'tier':9s} {'cold 1st':>8s} {'mixed':>8s} {'compiled':>8s} "
          f"{'warm 1st':>8s} {'jax 1st':>8s} {'tier1 ms':>8s} {'mixed ms':>8s} {'step ms':>8s} "
          f"{'numpy ms':>8s} "
          f"{'kernels':>7s} {'numba':>5s}")
    results = {}
    for case in cases:
        for tiered in (True, False):
            r = measure(case, tiered, env)
            results[(case, tiered)] = r
            c, w = r["cold"], r["warm"]
            print(f"{case:8s} {'tiered' if tiered else 'untiered':9s} "
                  f"{_fmt(c['first'])} {_fmt(c['mixed_at'])} {_fmt(c['compiled_at'])} "
                  f"{_fmt(w['first'], digits=3)} {_fmt(r['jax'], digits=3)} "
                  f"{_fmt(c['first_tier_ms'])} {_fmt(c['mixed_ms'])} "
                  f"{_fmt(c['step_ms'])} {_fmt(c['numpy_ms'])} {c['modules']:7d} "
                  f"{c['by_numba']:5d}",
                  flush=True)
    return results


if __name__ == "__main__":
    main()
