"""The Numba backend against NumPy eager and hand-written Numba (and JAX / PyTorch when they
are installed), float32, medians of interleaved runs. Run: ``python -m benchmarks backend``.

Cases: the elementwise chain at N = 1e6 and 1e7 (GB/s beside np.add's, max error against a
float64 reference), row softmax and layer norm of 4096 x 1024, an MLP forward pass
(784-512-512-10, batch 128), per-call overhead on 8-element arrays, and compile times (cold,
warm from disk, new batch size) and peak memory of the chain.
"""
from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
from numba import njit, prange

import tracejit as tj

from .timing import compare

F32 = np.float32


# The cases take their array module as ``xp`` so that jax.jit runs the same code on jax.numpy.
def chain(x, y, xp=np):
    return xp.tanh(x * y + 0.5 * x) * (1 / (1 + xp.exp(-y))) - x / (1 + y * y)


def softmax(x, xp=np):
    e = xp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layer_norm(x, g, b, xp=np):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc / xp.sqrt(var + F32(1e-5)) * g + b


def mlp(x, w1, b1, w2, b2, w3, b3, xp=np):
    h = xp.maximum(x @ w1 + b1, 0)
    h = xp.maximum(h @ w2 + b2, 0)
    return h @ w3 + b3


def jax_jit(fn, opt):
    """``fn`` under jax.jit on jax.numpy, called on NumPy arrays moved to JAX once, waiting for
    the result (JAX dispatches asynchronously)."""
    jax, jnp = opt["jax"]
    jitted = jax.jit(functools.partial(fn, xp=jnp))

    def on(*arrays):
        moved = [jnp.asarray(a) for a in arrays]
        return lambda: jitted(*moved).block_until_ready()
    return on


@njit(parallel=True, fastmath={"contract"})
def chain_numba(x, y, out):
    for i in prange(x.shape[0]):
        a, b = x[i], y[i]
        out[i] = math.tanh(a * b + F32(0.5) * a) * (F32(1) / (F32(1) + math.exp(-b))) \
            - a / (F32(1) + b * b)
    return out


@njit(parallel=True)
def softmax_numba(x, out):
    for i in prange(x.shape[0]):
        m = -np.inf
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(x.shape[1]):
            e = math.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        for j in range(x.shape[1]):
            out[i, j] /= s
    return out


@njit(parallel=True)
def layer_norm_numba(x, g, b, out):
    n = x.shape[1]
    for i in prange(x.shape[0]):
        s = 0.0
        for j in range(n):
            s += x[i, j]
        mu = s / n
        v = 0.0
        for j in range(n):
            v += (x[i, j] - mu) ** 2
        r = 1.0 / math.sqrt(v / n + 1e-5)
        for j in range(n):
            out[i, j] = (x[i, j] - mu) * r * g[j] + b[j]
    return out


@njit
def tiny_numba(x, y):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i] + x[i]
    return out


def bench(fns: dict, repeat: int = 15) -> dict:
    """Median seconds of each callable, measured side by side (timing.compare)."""
    return compare(fns, repeat=repeat)


def table(title: str, medians: dict, extra: dict | None = None, unit=1e3, uname="ms"):
    base = medians.get("numpy")
    print(f"\n{title}")
    print(f"  {'impl':<22}{'median ' + uname:>14}{'vs numpy':>10}  {'':<30}")
    for k, t in medians.items():
        ratio = f"{base / t:8.2f}x" if base else ""
        note = (extra or {}).get(k, "")
        print(f"  {k:<22}{t * unit:>14.3f}{ratio:>10}  {note}")


def _optional():
    found = {}
    try:
        import jax
        import jax.numpy as jnp
        found["jax"] = (jax, jnp)
    except ImportError:
        pass
    try:
        import torch
        found["torch"] = torch
    except ImportError:
        pass
    return found


def run_chain(n: int, opt: dict):
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(n).astype(F32) for _ in range(2))
    z = np.empty_like(x)
    ref = chain(x.astype(np.float64), y.astype(np.float64))
    jf = tj.jit(chain)
    fns = {"tracejit": lambda: jf(x, y), "numpy": lambda: chain(x, y),
           "numba (hand, libm)": lambda: chain_numba(x, y, z),
           "np.add(x,y,out=z)": lambda: np.add(x, y, out=z)}
    if "jax" in opt:
        fns["jax.jit"] = jax_jit(chain, opt)(x, y)
    if "torch" in opt:
        torch = opt["torch"]
        tc = torch.compile(chain)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        fns["torch.compile"] = lambda: tc(xt, yt)
    med = bench(fns, repeat=7 if n >= 10**7 else 15)
    nbytes = 3 * n * 4
    err = {"tracejit": jf(x, y), "numpy": chain(x, y), "numba (hand, libm)": chain_numba(x, y, z)}
    if "jax.jit" in fns:
        err["jax.jit"] = np.asarray(fns["jax.jit"]())
    notes = {k: f"{nbytes / t / 1e9:6.1f} GB/s" for k, t in med.items()}
    for k, v in err.items():
        notes[k] += f"  max err {np.max(np.abs(v.astype(np.float64) - ref)):.2e}"
    table(f"elementwise chain, N = {n:.0e}, float32", med, notes)
    return med


def run_rows(opt: dict):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 1024)).astype(F32)
    g, b = rng.standard_normal(1024).astype(F32), rng.standard_normal(1024).astype(F32)
    out = np.empty_like(x)
    js, jl = tj.jit(softmax), tj.jit(layer_norm)
    fns = {"tracejit": lambda: js(x), "numpy": lambda: softmax(x),
           "numba (hand, libm)": lambda: softmax_numba(x, out)}
    if "jax" in opt:
        fns["jax.jit"] = jax_jit(softmax, opt)(x)
    if "torch" in opt:
        torch = opt["torch"]
        xt = torch.from_numpy(x)
        fns["torch.softmax"] = lambda: torch.softmax(xt, dim=1)
    errs = {"tracejit": np.abs(js(x) - softmax(x.astype(np.float64))).max()}
    sm = bench(fns)
    table("row softmax 4096 x 1024, float32", sm, {k: f"max err {v:.1e}" for k, v in errs.items()})
    fns = {"tracejit": lambda: jl(x, g, b), "numpy": lambda: layer_norm(x, g, b),
           "numba (hand, libm)": lambda: layer_norm_numba(x, g, b, out)}
    if "jax" in opt:
        fns["jax.jit"] = jax_jit(layer_norm, opt)(x, g, b)
    if "torch" in opt:
        torch = opt["torch"]
        xt, gt, bt = (torch.from_numpy(a) for a in (x, g, b))
        fns["torch layer_norm"] = lambda: torch.nn.functional.layer_norm(xt, (1024,), gt, bt)
    ln = bench(fns)
    table("layer norm 4096 x 1024, float32", ln)
    return sm, ln


def run_mlp(opt: dict):
    rng = np.random.default_rng(0)
    sizes = (784, 512, 512, 10)
    ws = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        ws += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(F32), np.zeros(b, F32)]
    x = rng.standard_normal((128, 784)).astype(F32)
    jm = tj.jit(mlp)
    fns = {"tracejit": lambda: jm(x, *ws), "numpy": lambda: mlp(x, *ws)}
    if "jax" in opt:
        fns["jax.jit"] = jax_jit(mlp, opt)(x, *ws)
    if "torch" in opt:
        torch = opt["torch"]
        xt, *wt = (torch.from_numpy(a) for a in (x, *ws))

        def torch_mlp():
            h = torch.relu(xt @ wt[0] + wt[1])
            h = torch.relu(h @ wt[2] + wt[3])
            return h @ wt[4] + wt[5]
        fns["torch eager"] = torch_mlp
    med = bench(fns, repeat=31)
    table("MLP forward 784-512-512-10, batch 128, float32", med)
    return med


def tiny(a, b, xp=np):
    return a * b + a


def run_overhead(opt: dict):
    x, y = np.ones(8, F32), np.ones(8, F32)
    jf = tj.jit(tiny)
    jf(x, y)
    tiny_numba(x, y)

    def loop(f, n=20000):
        def run():
            for _ in range(n):
                f(x, y)
        return run
    fns = {"tracejit": loop(jf), "numba @njit direct": loop(tiny_numba), "numpy": loop(tiny)}
    if "jax" in opt:
        jax, jnp = opt["jax"]
        jt = jax.jit(functools.partial(tiny, xp=jnp))
        xj, yj = jnp.asarray(x), jnp.asarray(y)
        fns["jax.jit"] = loop(lambda a, b: jt(xj, yj).block_until_ready())
    med = bench(fns, repeat=7)
    med = {k: v / 20000 for k, v in med.items()}
    base = med["numba @njit direct"]
    table("per-call overhead, 8-element float32 arrays", med,
          {k: f"{v / base:5.2f}x the @njit call" for k, v in med.items()}, unit=1e6,
          uname="us")
    return med


_COMPILE_SCRIPT = textwrap.dedent("""
    import time, sys
    t0 = time.perf_counter()
    import numpy as np, tracejit as tj
    from benchmarks.backend import chain
    t1 = time.perf_counter()
    f = tj.jit(chain)
    x = np.ones(1000, np.float32)
    t = time.perf_counter(); f(x, x); first = time.perf_counter() - t
    t = time.perf_counter(); f(x, x); steady = time.perf_counter() - t
    y = np.ones(2000, np.float32)
    t = time.perf_counter(); f(y, y); newb = time.perf_counter() - t
    ts = []
    for _ in range(20):
        t = time.perf_counter(); f(y, y); ts.append(time.perf_counter() - t)
    ts.sort()
    t = time.perf_counter(); tj.make_ir(chain)(y, y); trace = time.perf_counter() - t
    print(first, steady, newb, ts[10], t1 - t0, trace)
""")

_MEMORY_SCRIPT = textwrap.dedent("""
    import numpy as np, tracejit as tj
    from benchmarks.backend import chain
    f = tj.jit(chain)
    n = 10**7
    # compile, and run the parallel variant once (its first run starts per-thread state)
    f(np.ones(n // 10, np.float32), np.ones(n // 10, np.float32))
    # float32 drawn directly: a float64 temporary would raise the peak before the call and
    # hide what the call itself allocates
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    y = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    def status_kib(key):
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith(key + ":"))
    with open("/proc/self/clear_refs", "w") as fh:   # reset the peak (VmHWM) to the current RSS
        fh.write("5")
    base = status_kib("VmRSS")
    out = f(x, y)
    peak = status_kib("VmHWM")
    print(base * 1024, peak * 1024, x.nbytes + y.nbytes + out.nbytes)
""")


# Numba's own warm start: a hand-written @njit(cache=True) loop, imported from a module beside
# its cache, first call in a fresh process (Numba builds its typing and target contexts on the
# first compile or cache load in a process, importing scipy.linalg among others).
_HAND_MODULE = textwrap.dedent("""
    import math
    import numpy as np
    from numba import njit

    @njit(cache=True)
    def chain(x, y):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            a, b = x[i], y[i]
            out[i] = math.tanh(a * b + 0.5 * a) * (1 / (1 + math.exp(-b))) - a / (1 + b * b)
        return out
""")

_HAND_SCRIPT = textwrap.dedent("""
    import time
    import numpy as np
    import numba
    from hand_chain import chain
    x = np.ones(1000, np.float32)
    t = time.perf_counter(); chain(x, x); print(time.perf_counter() - t)
""")

# The MLP training step of benchmarks/train_step.py: a program of 23 kernels.
_STEP_SCRIPT = textwrap.dedent("""
    import time
    from benchmarks.train_step import init, tracejit_step
    p, x, y = init()
    t = time.perf_counter(); tracejit_step(p, x, y); print(time.perf_counter() - t)
""")


def _script_numbers(script: str, env: dict) -> list[float]:
    """What a script run in a fresh process printed, as numbers."""
    return [float(v) for v in subprocess.run([sys.executable, "-c", script], env=env, text=True,
                                             capture_output=True, check=True).stdout.split()]


def _first_calls(script: str, env: dict, runs: int = 2) -> list[float]:
    return [_script_numbers(script, env)[0] for _ in range(runs)]


def run_compile_and_memory():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TRACEJIT_CACHE_DIR=d, PYTHONPATH=root)
        runs = [_script_numbers(_COMPILE_SCRIPT, env) for _ in range(2)]
        mem = _script_numbers(_MEMORY_SCRIPT, env)
        step_cold, step_warm = _first_calls(_STEP_SCRIPT, env)
        with open(os.path.join(d, "hand_chain.py"), "w") as f:
            f.write(_HAND_MODULE)
        hand_cold, hand_warm = _first_calls(_HAND_SCRIPT, dict(env, PYTHONPATH=d))
    (cold, steady, newb, steady_new, imp, trace), (warm, *_rest) = runs
    print("\ncompile times of the elementwise chain (fresh processes; import not included)")
    print(f"  import tracejit + numba:                {imp * 1e3:9.1f} ms")
    print(f"  first call, empty cache (cold):         {cold * 1e3:9.1f} ms")
    print(f"  first call, warm disk cache:            {warm * 1e3:9.1f} ms   "
          f"(cold/warm = {cold / warm:.1f}x, target >= 5x)")
    print(f"  first call at a new batch size:         {newb * 1e3:9.3f} ms   "
          f"(= {newb / (steady_new + trace):.1f}x a steady call of {steady_new * 1e6:.1f} us "
          f"plus the trace, {trace * 1e3:.2f} ms; target <= 5x)")
    print(f"  for comparison, a hand-written @njit(cache=True) chain: first call "
          f"{hand_cold * 1e3:.1f} ms cold, {hand_warm * 1e3:.1f} ms from Numba's cache "
          f"(Numba sets up its compiler context; codegen/warm_load.py skips that)")
    print(f"  MLP training step (23 kernels): first call {step_cold * 1e3:.0f} ms cold, "
          f"{step_warm * 1e3:.0f} ms warm (cold/warm = {step_cold / step_warm:.1f}x)")
    base, peak, need = (int(v) for v in mem)
    grew = max(peak - base, 0)
    out_bytes = need / 3
    print(f"\npeak memory of the chain at N = 1e7: inputs + output = {need / 2**20:.1f} MiB; "
          f"peak RSS grew {grew / 2**20:.1f} MiB in the call (the output is "
          f"{out_bytes / 2**20:.1f} MiB), so peak = inputs + output + "
          f"{100 * max(grew - out_bytes, 0) / need:.1f}% (target <= 10%)")
    return {"cold": cold, "warm": warm, "new_batch": newb, "steady": steady_new,
            "hand_warm": hand_warm, "step_cold": step_cold, "step_warm": step_warm}


def run_parallel_min(sizes=(1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 20)):
    """The chain with the serial kernel variant against the parallel one (Numba's threads) at
    each size: where the parallel variant starts to win is plan.PARALLEL_MIN."""
    from tracejit.codegen import Plan, Program
    from tracejit.driver import fusion_of
    rng = np.random.default_rng(0)
    print("\nparallel threshold (chain): serial vs parallel kernel, median us")
    out = {}
    for n in sizes:
        x = rng.random(n, dtype=F32)
        y = rng.random(n, dtype=F32)
        fn = tj.jit(chain).lower(x, y).function
        fusion = fusion_of(fn)
        ser = Program(Plan(fusion, par_min=1 << 62))
        par = Program(Plan(fusion, par_min=1))
        m = bench({"ser": lambda: ser([x, y]), "par": lambda: par([x, y])}, repeat=41)
        out[n] = m
        print(f"  n={n:>8}  serial {m['ser'] * 1e6:9.1f}  parallel {m['par'] * 1e6:9.1f}  "
              f"({m['ser'] / m['par']:.2f}x)")
    return out


def main() -> dict:
    opt = _optional()
    print(f"tracejit backend benchmarks; optional: {sorted(opt) or 'none (jax/torch absent)'}")
    results = {"overhead": run_overhead(opt)}
    for n in (10**6, 10**7):
        results[f"chain{n}"] = run_chain(n, opt)
    results["softmax"], results["layer_norm"] = run_rows(opt)
    results["mlp"] = run_mlp(opt)
    results["parallel_min"] = run_parallel_min()
    results["compile"] = run_compile_and_memory()
    return results


if __name__ == "__main__":
    main()
