"""One training step (forward, backward, Adam update; batch 32; float32) of the reference CNN
and MLP (tracejit.demo.models), as one jitted function, beside the same step in PyTorch eager on
CPU when PyTorch is importable. Then the first 20 losses of tracejit and PyTorch from the same
initial weights (copied into torch modules) and the same batches.

    python -m benchmarks.models                # medians over 20 steps
    python -m benchmarks.models --repeat 50 --agree-steps 20
    python -m benchmarks.models --optimizer sgd --model CNN

PyTorch is not a dependency of tracejit: install it into the benchmark environment only.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tracejit import optim
from tracejit.demo.models import MLP, SimpleCNN
from tracejit.demo.train import make_train_step

from .timing import median_ms

BATCH, LR, SGD_LR = 32, 1e-3, 1e-2
MODELS = {"CNN": SimpleCNN, "MLP": MLP}


def batches(n_batches: int, seed: int = 0):
    """Batches of 28x28 digits (scikit-learn's, upsampled) if available, else random images."""
    rng = np.random.default_rng(seed)
    try:
        from tracejit.demo.data import load_digits_28
        (x, y), _ = load_digits_28()
    except ImportError:
        x = rng.standard_normal((BATCH * n_batches, 1, 28, 28)).astype(np.float32)
        y = rng.integers(0, 10, BATCH * n_batches)
    out = []
    for i in range(n_batches):
        idx = rng.choice(len(y), BATCH, replace=False)
        out.append((np.ascontiguousarray(x[idx]), y[idx].astype(np.int64)))
    return out


def timed_median_ms(step, n_steps: int, warmup: int = 2) -> float:
    return median_ms(step, n_steps, warmup)


# -- tracejit ------------------------------------------------------------------------------------

OPTIMIZERS = {"adam": (lambda: optim.Adam(lr=LR)), "sgd": (lambda: optim.SGD(lr=SGD_LR))}


class TracejitTrainer:
    def __init__(self, name: str, seed: int = 0, optimizer: str = "adam"):
        self.model = MODELS[name](rng=np.random.default_rng(seed))
        self.opt = OPTIMIZERS[optimizer]()
        self.state = self.opt.init(self.model)
        self.step_fn = make_train_step(self.opt)

    def step(self, x, y) -> float:
        self.model, self.state, loss = self.step_fn(self.model, self.state, x, y)
        return float(loss)


# -- PyTorch -------------------------------------------------------------------------------------

def jax_cnn_step():
    """The CNN's training step (forward, cross-entropy, backward, Adam) under jax.jit, for
    first-call comparisons (benchmarks/compile.py): a function of no arguments that runs one
    step, or None without JAX. Same shapes, float32, NCHW/OIHW as tracejit.nn's Conv2d."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    rng = np.random.default_rng(0)

    def w(*shape):
        return jnp.asarray(rng.standard_normal(shape).astype(np.float32) * 0.05)
    params = {"c1": w(32, 1, 3, 3), "c1b": w(32), "c2": w(64, 32, 3, 3), "c2b": w(64),
              "f1": w(64 * 28 * 28, 128), "f1b": w(128), "f2": w(128, 10), "f2b": w(10)}

    def conv(x, k, b):
        y = jax.lax.conv_general_dilated(x, k, (1, 1), ((1, 1), (1, 1)),
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return y + b[None, :, None, None]

    def loss(p, x, y):
        h = jax.nn.relu(conv(x, p["c1"], p["c1b"]))
        h = jax.nn.relu(conv(h, p["c2"], p["c2b"])).reshape(x.shape[0], -1)
        h = jax.nn.relu(h @ p["f1"] + p["f1b"])
        logp = jax.nn.log_softmax(h @ p["f2"] + p["f2b"], axis=1)
        return -logp[jnp.arange(x.shape[0]), y].mean()

    @jax.jit
    def step(p, m, v, t, x, y):
        value, g = jax.value_and_grad(loss)(p, x, y)
        t = t + 1
        m = {k: 0.9 * m[k] + 0.1 * g[k] for k in p}
        v = {k: 0.999 * v[k] + 0.001 * g[k] * g[k] for k in p}
        c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        p = {k: p[k] - LR * (m[k] / c1) / (jnp.sqrt(v[k] / c2) + 1e-8) for k in p}
        return p, m, v, t, value
    zeros = {k: jnp.zeros_like(a) for k, a in params.items()}
    x = jnp.asarray(rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32))
    y = jnp.asarray(rng.integers(0, 10, BATCH))
    t = jnp.asarray(0.0, jnp.float32)
    return lambda: jax.block_until_ready(step(params, zeros, zeros, t, x, y))


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def torch_model(name: str, state_dict: dict):
    """The same architecture in torch.nn, with the tracejit model's weights (same keys)."""
    import torch
    from torch import nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, stride=1, padding=1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1, 1)
            self.fc1 = nn.Linear(64 * 28 * 28, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = torch.relu(self.conv1(x))
            x = torch.relu(self.conv2(x))
            x = torch.flatten(x, 1)
            x = torch.relu(self.fc1(x))
            return self.fc2(x)

    class MLPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(),
                                     nn.Linear(128, 10))

        def forward(self, x):
            return self.net(x)

    model = CNN() if name == "CNN" else MLPT()
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state_dict.items()})
    return model


class TorchTrainer:
    def __init__(self, name: str, state_dict: dict, optimizer: str = "adam"):
        import torch
        self.torch = torch
        self.model = torch_model(name, state_dict)
        params = self.model.parameters()
        self.opt = (torch.optim.Adam(params, lr=LR) if optimizer == "adam"
                    else torch.optim.SGD(params, lr=SGD_LR))

    def step(self, x, y) -> float:
        torch = self.torch
        self.opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(self.model(torch.from_numpy(x)),
                                                 torch.from_numpy(y))
        loss.backward()
        self.opt.step()
        return loss.item()


# -- the two measurements --------------------------------------------------------------------------

def _time_one(framework: str, name: str, repeat: int, optimizer: str,
              torch_threads: int = 0) -> dict:
    data = batches(repeat + 3, seed=1)
    if framework == "tracejit":
        trainer = TracejitTrainer(name, optimizer=optimizer)
    else:
        import torch
        if torch_threads:
            torch.set_num_threads(torch_threads)
        trainer = TorchTrainer(name, TracejitTrainer(name).model.state_dict(), optimizer)
    t = time.perf_counter()
    trainer.step(*data[0])
    first = time.perf_counter() - t
    it = iter(data[1:])
    res = {"ms": timed_median_ms(lambda: trainer.step(*next(it)), repeat), "first_s": first}
    if framework == "torch":
        res["threads"] = torch.get_num_threads()
    return res


def _time_in_subprocess(framework: str, name: str, repeat: int, optimizer: str,
                        torch_threads: int = 0) -> dict:
    """Each framework in a process of its own: thread pools that spin after use (OpenMP in
    PyTorch, Numba's parallel layer) would otherwise slow down whichever runs second."""
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-m", "benchmarks.models", "--worker", framework,
                          "--model", name, "--repeat", str(repeat), "--optimizer", optimizer,
                          "--torch-threads", str(torch_threads)],
                         cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{framework} {name} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_steps(name: str, repeat: int, optimizer: str = "adam", torch_threads: int = 0) -> dict:
    tj = _time_in_subprocess("tracejit", name, repeat, optimizer)
    res = {"tracejit_ms": tj["ms"], "tracejit_first_call_s": tj["first_s"]}
    if torch_available():
        pt = _time_in_subprocess("torch", name, repeat, optimizer, torch_threads)
        res["torch_ms"], res["torch_threads"] = pt["ms"], pt["threads"]
    return res


def agreement(name: str, n_steps: int = 20, optimizer: str = "adam") -> dict | None:
    """The first n_steps losses of tracejit and PyTorch, from the same weights and batches."""
    if not torch_available():
        return None
    data = batches(n_steps, seed=2)
    tj = TracejitTrainer(name, seed=3, optimizer=optimizer)
    tt = TorchTrainer(name, tj.model.state_dict(), optimizer)
    a = np.array([tj.step(x, y) for x, y in data])
    b = np.array([tt.step(x, y) for x, y in data])
    rel = np.abs(a - b) / np.abs(b)
    return {"tracejit": a, "torch": b, "max_rel_diff": float(rel.max())}


def main(repeat: int = 20, agree_steps: int = 20, tolerance: float = 1e-3,
         optimizer: str = "adam", models=tuple(MODELS), torch_threads: int = 0) -> dict:
    results = {}
    label = {"adam": "Adam", "sgd": "SGD"}[optimizer]
    for name in models:
        r = time_steps(name, repeat, optimizer, torch_threads)
        results[name] = r
        line = (f"{name} training step (batch {BATCH}, {label}, float32): tracejit "
                f"{r['tracejit_ms']:8.2f} ms median of {repeat} (first call "
                f"{r['tracejit_first_call_s']:.1f} s)")
        if "torch_ms" in r:
            line += (f" | PyTorch eager {r['torch_ms']:8.2f} ms ({r['torch_threads']} threads)"
                     f" | tracejit/PyTorch = {r['tracejit_ms'] / r['torch_ms']:.2f}x")
        print(line, flush=True)
    if not torch_available():
        print("PyTorch is not installed: no side-by-side timing, no loss agreement check")
        return results
    ok = True
    for name in models:
        agr = agreement(name, agree_steps, optimizer)
        results[name]["agreement"] = agr
        good = agr["max_rel_diff"] <= tolerance
        ok &= good
        print(f"{name}: first {agree_steps} losses, max relative difference tracejit vs PyTorch "
              f"{agr['max_rel_diff']:.2e} ({'OK' if good else 'DISAGREE'}; tolerance "
              f"{tolerance:g})")
        print("  tracejit " + " ".join(f"{v:.4f}" for v in agr["tracejit"]))
        print("  pytorch  " + " ".join(f"{v:.4f}" for v in agr["torch"]))
    results["losses_agree"] = ok
    return results


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=20, help="timed steps per model")
    ap.add_argument("--agree-steps", type=int, default=20)
    ap.add_argument("--tolerance", type=float, default=1e-3,
                    help="max relative loss difference vs PyTorch")
    ap.add_argument("--optimizer", choices=("adam", "sgd"), default="adam")
    ap.add_argument("--model", choices=tuple(MODELS), action="append",
                    help="only this model (repeatable)")
    ap.add_argument("--torch-threads", type=int, default=0,
                    help="torch.set_num_threads for the PyTorch timing (0: PyTorch's default)")
    ap.add_argument("--worker", choices=("tracejit", "torch"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_time_one(args.worker, args.model[0], args.repeat, args.optimizer,
                                   args.torch_threads)))
        raise SystemExit(0)
    res = main(args.repeat, args.agree_steps, args.tolerance, args.optimizer,
               tuple(args.model or MODELS), args.torch_threads)
    raise SystemExit(0 if res.get("losses_agree", True) else 1)
