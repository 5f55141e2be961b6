"""float16 storage against float32, compiled: what halving the bytes buys when every float16
element is converted on load, each float16 op is rounded, and stores convert back
(codegen/half.py). Run: ``python -m benchmarks half_precision``.

Cases, each timed side by side in one run (timing.compare): the elementwise chain at
N = 1e7 (issue #16's target: float16 at least 1.6x faster than float32), row softmax of
4096 x 1024, and ``0.5 * x + y`` at 1e7 (a kernel bound by memory bandwidth alone, the most
float16 storage can save); NumPy's own float16 and float32 beside them for scale. float16
runs three times: with the CPU's F16C conversions (the default where the CPU has them), with
float32 intermediates (``amp.excess_precision``: a conversion on load and on store only, as
jax.jit and torch.compile compute float16 chains) and with tracejit's own routines
(``TRACEJIT_F16C=0``, codegen/half.py); bfloat16 too where ml_dtypes
is installed (integer conversions, codegen/bfloat16.py). Ratios are float32's time over the
16-bit one's (above 1: the 16-bit storage is faster).
"""
from __future__ import annotations

import os

import numpy as np

import tracejit as tj
from tracejit.ir import dtypes

from .backend import _optional, chain, jax_jit, softmax, table
from .timing import compare

F16, F32 = np.float16, np.float32
BF16 = dtypes.bfloat16.np if dtypes.bfloat16 is not None else None     # with ml_dtypes


def _compiled(fn, *args, f16c: bool = True):
    """``fn`` jitted without tiers, warmed up, its parallel kernels handed off natively;
    ``f16c`` False: its float16 kernels convert with tracejit's routines."""
    saved, tj.config.f16c = tj.config.f16c, f16c
    try:
        jitted = tj.jit(fn, tiered=False)
        jitted(*args)
    finally:
        tj.config.f16c = saved
    jitted.lower(*args)._entry.program.wait()
    return lambda: jitted(*args)


def _case(title: str, fn, make, nbytes_per_elem: int, n: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    args32 = make(rng)
    args16 = tuple(a.astype(F16) for a in args32)
    fns = {"tracejit float16": _compiled(fn, *args16),
           "tracejit f16 excess": _compiled(tj.amp.excess_precision(fn), *args16),
           "tracejit f16 routines": _compiled(fn, *args16, f16c=False),
           "tracejit float32": _compiled(fn, *args32),
           "numpy float16": lambda: fn(*args16), "numpy": lambda: fn(*args32)}
    if BF16 is not None:
        args_bf16 = tuple(a.astype(BF16) for a in args32)
        fns["tracejit bfloat16"] = _compiled(fn, *args_bf16)
    opt = _optional()
    if "jax" in opt:                     # the peer's own float16 against its float32
        on = jax_jit(fn, opt)
        fns["jax.jit float16"], fns["jax.jit float32"] = on(*args16), on(*args32)
        for f in (fns["jax.jit float16"], fns["jax.jit float32"]):
            f()
    med = compare(fns, repeat=repeat)
    ref = fn(*(a.astype(np.float64) for a in args32))
    notes = {}
    for k, t in med.items():
        bytes_per = nbytes_per_elem // (2 if "16" in k else 1)
        notes[k] = f"{n * bytes_per / t / 1e9:6.1f} GB/s"
    err16 = np.abs(fns["tracejit float16"]().astype(np.float64) - ref).max()
    err32 = np.abs(fns["tracejit float32"]().astype(np.float64) - ref).max()
    notes["tracejit float16"] += f"  max err {err16:.1e}"
    notes["tracejit float32"] += f"  max err {err32:.1e}"
    table(title, med, notes)
    ratio = med["tracejit float32"] / med["tracejit float16"]
    soft = med["tracejit float32"] / med["tracejit f16 routines"]
    print(f"  float16 storage vs float32, compiled: {ratio:.2f}x with F16C, {soft:.2f}x with "
          "tracejit's routines (above 1: float16 faster)")
    excess = med["tracejit float32"] / med["tracejit f16 excess"]
    print(f"  float16 with float32 intermediates (amp.excess_precision, as jax.jit and "
          f"torch.compile compute) vs float32: {excess:.2f}x")
    out = {"medians": med, "ratio": ratio, "ratio_routines": soft, "ratio_excess": excess}
    if "jax.jit float16" in med:
        out["ratio_jax"] = med["jax.jit float32"] / med["jax.jit float16"]
        print(f"  jax.jit's float16 vs its float32: {out['ratio_jax']:.2f}x")
    if BF16 is not None:
        out["ratio_bfloat16"] = med["tracejit float32"] / med["tracejit bfloat16"]
        print(f"  bfloat16 storage vs float32, compiled: {out['ratio_bfloat16']:.2f}x")
    return out


def run_chain(n: int = 10 ** 7) -> dict:
    # two inputs read, one output written: 12 bytes per element in float32
    return _case(f"elementwise chain, N = {n:.0e}: float16 storage vs float32", chain,
                 lambda rng: tuple(rng.standard_normal(n).astype(F32) for _ in range(2)),
                 12, n, repeat=9)


def run_softmax(rows: int = 4096, cols: int = 1024) -> dict:
    # the row read twice (max, then exp and sum), the output written and read back once
    return _case(f"row softmax {rows} x {cols}: float16 storage vs float32", softmax,
                 lambda rng: (rng.standard_normal((rows, cols)).astype(F32),),
                 16, rows * cols, repeat=15)


def run_axpy(n: int = 10 ** 7) -> dict:
    return _case(f"0.5 * x + y, N = {n:.0e} (bandwidth-bound): float16 storage vs float32",
                 _axpy, lambda rng: tuple(rng.standard_normal(n).astype(F32) for _ in range(2)),
                 12, n, repeat=15)


def _axpy(x, y, xp=np):
    return 0.5 * x + y


def main() -> dict:
    print(f"float16 storage against float32 ({os.cpu_count()} CPUs)")
    results = {"chain": run_chain(), "softmax": run_softmax(), "axpy": run_axpy()}
    # The chain moves as many bytes per element as 0.5 * x + y: where its float32 GB/s are
    # well below the axpy's, it is bound by arithmetic, which float16 storage does not cut.
    gbs = {k: 12 * 10 ** 7 / results[k]["medians"]["tracejit float32"] / 1e9
           for k in ("chain", "axpy")}
    print(f"\nfloat32 at 1e7: the chain moves {gbs['chain']:.1f} GB/s, 0.5 * x + y "
          f"{gbs['axpy']:.1f} GB/s ({gbs['chain'] / gbs['axpy']:.0%}: "
          f"{'bound by arithmetic' if gbs['chain'] < 0.8 * gbs['axpy'] else 'by memory'})")
    for key, how in (("ratio", "NumPy's float16 (a rounding per op)"),
                     ("ratio_excess", "float32 intermediates (excess_precision)")):
        target = results["chain"][key]
        print(f"issue #16 target, chain at 1e7: float16 >= 1.6x faster than float32, with "
              f"{how}: {target:.2f}x ({'met' if target >= 1.6 else 'not met'})")
    return results


if __name__ == "__main__":
    main()
