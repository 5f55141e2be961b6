"""Convolution: tracejit's im2col + one GEMM (nn.functional.conv2d) against a direct Numba
kernel, NumPy eager and PyTorch (when installed), on the reference CNN's layers.

Answers the question of issue #5: which of the two ways should tracejit's conv2d use.

    python -m benchmarks.conv
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

import tracejit as tj
from tracejit.nn import functional as F

from .timing import median_ms


@njit(parallel=True, fastmath={"contract"}, cache=True)
def conv3x3_direct(x, w, b, out):
    """Stride 1, padding 1: out[n, o] = b[o] + sum_c,i,j w[o, c, i, j] * x[n, c, y+i-1, x+j-1].

    Parallel over (image, output channel); the innermost loop runs along a row, so it
    vectorizes; no padded copy (bounds are handled by clipping the row ranges).
    """
    n_img, c_in, h, wd = x.shape
    c_out = w.shape[0]
    for job in prange(n_img * c_out):
        n = job // c_out
        o = job % c_out
        acc = np.empty((h, wd), np.float32)
        acc[:, :] = b[o]
        for c in range(c_in):
            for i in range(3):
                for j in range(3):
                    wv = w[o, c, i, j]
                    y0 = max(0, 1 - i)
                    y1 = min(h, h + 1 - i)
                    x0 = max(0, 1 - j)
                    x1 = min(wd, wd + 1 - j)
                    for yy in range(y0, y1):
                        for xx in range(x0, x1):
                            acc[yy, xx] += wv * x[n, c, yy + i - 1, xx + j - 1]
        out[n, o] = acc
    return out


def main():
    rng = np.random.default_rng(0)
    rows = []
    for name, (n, c, o) in {"conv1 1->32": (32, 1, 32), "conv2 32->64": (32, 32, 64)}.items():
        x = rng.standard_normal((n, c, 28, 28)).astype(np.float32)
        w = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
        b = rng.standard_normal(o).astype(np.float32)
        out = np.empty((n, o, 28, 28), np.float32)
        ref = F.conv2d(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                       padding=1)
        jitted = tj.jit(lambda x, w, b: F.conv2d(x, w, b, padding=1))
        impls = {
            "tracejit im2col+GEMM": lambda: jitted(x, w, b),
            "direct Numba kernel": lambda: conv3x3_direct(x, w, b, out),
            "NumPy eager im2col": lambda: F.conv2d(x, w, b, padding=1),
        }
        try:
            import torch
            tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
            impls["PyTorch eager"] = lambda: torch.nn.functional.conv2d(tx, tw, tb, padding=1)
        except ImportError:
            pass
        for impl, fn in impls.items():
            res = np.asarray(fn())
            err = float(np.max(np.abs(res - ref)))
            rows.append((name, impl, median_ms(fn, repeat=15), err))
    base = {name: ms for name, impl, ms, _ in rows if impl == "tracejit im2col+GEMM"}
    print(f"{'layer (batch 32, 28x28)':<24}{'implementation':<24}{'median ms':>10}"
          f"{'vs tracejit':>12}{'max err':>10}")
    for name, impl, ms, err in rows:
        print(f"{name:<24}{impl:<24}{ms:>10.2f}{ms / base[name]:>11.2f}x{err:>10.1e}")


if __name__ == "__main__":
    main()
