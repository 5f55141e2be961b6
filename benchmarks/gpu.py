"""The prepared script for a real GPU (issue #15): the CUDA backend's tests on the device
(tests/test_cuda_*.py with TRACEJIT_CUDA_DEVICE_TESTS=1, see tests/cuda_simulator.py), then an
elementwise chain at N = 1e8 in GB/s against the device's measured copy bandwidth, a full sum
at N = 1e8 (the two-pass reduction), a row softmax, and the MLP training step (784-512-512-10,
batch 128, SGD: benchmarks/train_step.py) and a CNN step (conv 1->8->16 3x3, batch 32, SGD)
against PyTorch on the same GPU if it is installed. Parameters stay on the device between
steps (device_results=True, fed back as arguments).

    python -m benchmarks.gpu            # tests, then benchmarks
    python -m benchmarks.gpu --no-tests

Prints that no GPU is present and exits 0 where there is none.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def _best(fn, repeat=5):
    from numba import cuda
    fn()
    cuda.synchronize()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        cuda.synchronize()
        times.append(time.perf_counter() - t)
    return min(times)


def run_tests() -> int:
    """pytest tests/test_cuda_*.py on the real device (a child process: the tests choose the
    simulator unless told otherwise); its exit status."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, TRACEJIT_CUDA_DEVICE_TESTS="1")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    tests = sorted(str(p) for p in (root / "tests").glob("test_cuda_*.py"))
    print("running", " ".join(Path(t).name for t in tests), "on the device", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-rs", "-p",
                            "no:cacheprovider", "-m", "not slow", *tests], cwd=root, env=env)


def _sgd_step(loss_fn, lr):
    import tracejit as tj

    def step(p, x, y):
        loss, g = tj.value_and_grad(loss_fn)(p, x, y)
        return loss, {k: p[k] - lr * g[k] for k in p}
    return tj.jit(step, device="cuda", device_results=True)


def _on_device(params):
    from numba import cuda
    return {k: cuda.to_device(v) for k, v in params.items()}


def _time_steps(step, p, x, y, repeat=20):
    """Median ms of a step whose parameters stay on the device."""
    from numba import cuda
    for _ in range(3):
        _, p = step(p, x, y)
    cuda.synchronize()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        loss, p = step(p, x, y)
        cuda.synchronize()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3, loss


def _torch_time(step, repeat=20):
    import torch
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def cnn_init(seed=0, batch=32):
    rng = np.random.default_rng(seed)
    p = {"c0": (rng.standard_normal((8, 1, 3, 3)) * 0.3).astype(np.float32),
         "cb0": np.zeros(8, np.float32),
         "c1": (rng.standard_normal((16, 8, 3, 3)) * 0.1).astype(np.float32),
         "cb1": np.zeros(16, np.float32),
         "w": (rng.standard_normal((16 * 28 * 28, 10)) * 0.01).astype(np.float32),
         "b": np.zeros(10, np.float32)}
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    return p, x, rng.integers(0, 10, batch)


def cnn_loss(p, x, y):
    import tracejit as tj
    F = tj.nn.functional
    h = np.maximum(F.conv2d(x, p["c0"], p["cb0"], padding=1), 0.0)
    h = np.maximum(F.conv2d(h, p["c1"], p["cb1"], padding=1), 0.0)
    return F.cross_entropy(h.reshape(x.shape[0], -1) @ p["w"] + p["b"], y)


def training_steps():
    """The MLP and CNN steps on the device, against PyTorch on the same GPU."""
    from numba import cuda
    from . import train_step
    rows = []
    for name, loss_fn, init, lr in (("MLP 784-512-512-10 b128", train_step.loss_fn,
                                     train_step.init, train_step.LR),
                                    ("CNN conv8-conv16-fc b32", cnn_loss, cnn_init, 0.01)):
        p, x, y = init()
        step = _sgd_step(loss_fn, lr)
        ms, loss = _time_steps(step, _on_device(p), cuda.to_device(x), cuda.to_device(y))
        print(f"{name}: tracejit {ms:.2f} ms/step (loss {float(np.asarray(loss.copy_to_host()).ravel()[0]):.4f})",
              flush=True)
        rows.append((name, ms, loss_fn, init, lr))
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: no comparison")
        return
    for name, ms, _, init, lr in rows:
        p, x, y = init()
        tp = {k: torch.tensor(v, device="cuda", requires_grad=True) for k, v in p.items()}
        tx, ty = torch.tensor(x, device="cuda"), torch.tensor(y, device="cuda")
        F = torch.nn.functional

        def forward():
            if name.startswith("MLP"):
                h = torch.relu(tx @ tp["w0"] + tp["b0"])
                h = torch.relu(h @ tp["w1"] + tp["b1"])
                return F.cross_entropy(h @ tp["w2"] + tp["b2"], ty)
            h = torch.relu(F.conv2d(tx, tp["c0"], tp["cb0"], padding=1))
            h = torch.relu(F.conv2d(h, tp["c1"], tp["cb1"], padding=1))
            return F.cross_entropy(h.flatten(1) @ tp["w"] + tp["b"], ty)

        def step():
            loss = forward()
            for v in tp.values():
                v.grad = None
            loss.backward()
            with torch.no_grad():
                for v in tp.values():
                    v -= lr * v.grad
        t = _torch_time(step)
        print(f"{name}: torch {t:.2f} ms/step; tracejit/torch {ms / t:.2f}x (target <= 2x)",
              flush=True)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        from tracejit.codegen.cuda import has_device
    except ImportError as e:
        print(f"no GPU: numba-cuda is not installed ({e})")
        return 0
    if not has_device():
        print("no GPU is present: nothing to measure (the script is ready for one)")
        return 0
    status = 0 if "--no-tests" in argv else run_tests()
    benchmarks()
    return status


def benchmarks():
    from numba import cuda
    import tracejit as tj
    n = 10 ** 8
    x = cuda.to_device(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    y = cuda.device_array_like(x)
    copy_s = _best(lambda: y.copy_to_device(x))
    copy_gbs = 2 * 4 * n / copy_s / 1e9
    print(f"device: {cuda.get_current_device().name}; copy bandwidth {copy_gbs:.0f} GB/s")

    def chain(x):
        return np.tanh(x * 2.0 + 1.0) * 0.5 + x

    f = tj.jit(chain, device="cuda", device_results=True)
    xh = x.copy_to_host()
    f(xh)
    prog = f.lower(xh)._entry.program
    kernel, (grid, block) = prog._compiled[0]
    spec = prog.kernels[0]
    out = cuda.device_array_like(x)
    t = _best(lambda: kernel[grid, block](x, out, *[v.type.dtype.np.type(
        v.op.attrs["value"][()]) for v in spec.scalars], *spec.sizes))
    print(f"elementwise chain N=1e8: {t * 1e3:.2f} ms, {8 * n / t / 1e9:.0f} GB/s "
          f"({8 * n / t / 1e9 / copy_gbs:.0%} of copy bandwidth; target >= 70%)")
    xs = np.random.default_rng(1).standard_normal((4096, 1024)).astype(np.float32)

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    sm = tj.jit(softmax, device="cuda", device_results=True)
    xd = cuda.to_device(xs)
    np.testing.assert_allclose(sm(xd).copy_to_host(), softmax(xs), rtol=1e-4, atol=1e-6)
    t = _best(lambda: sm(xd))
    print(f"softmax 4096x1024 (on the device): {t * 1e3:.2f} ms")
    total = tj.jit(lambda x: x.sum(), device="cuda", device_results=True)
    kinds = [spec.kind for _, spec in total.lower(x)._entry.program.launched]
    got = float(total(x).copy_to_host()[0])
    t = _best(lambda: total(x))
    print(f"sum N=1e8 ({' + '.join(kinds)}): {t * 1e3:.2f} ms, {4 * n / t / 1e9:.0f} GB/s; "
          f"{got:.3f} vs NumPy {float(xh.sum(dtype=np.float64)):.3f}")
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        xt = torch.tensor(xs, device="cuda")
        t = _best(lambda: torch.softmax(xt, dim=1))
        print(f"torch softmax (on device): {t * 1e3:.2f} ms")
    training_steps()


if __name__ == "__main__":
    sys.exit(main())
