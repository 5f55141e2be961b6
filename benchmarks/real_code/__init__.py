"""Real NumPy code under jit (issue 13's target): our rewrites of functions from NPBench,
picoGPT, min-char-rnn, cs231n, HIPS autograd and numpy-ml (see ``case.py``), each run eagerly
and under ``jit`` and compared, its gradient checked, its speed measured.

    python -m benchmarks real_code                 # the whole table (compiled, untiered)
    python -m benchmarks.real_code gemm picogpt    # rows whose name contains one of these
    python -m benchmarks.real_code --backend numpy --no-time
    python -m benchmarks.real_code --no-grad       # the speed ratios alone

Columns: ``runs``: yes, or the error's type and first line; ``err``: max |jit - numpy| /
max |numpy| over the results (returned values and arguments written into) at the small size;
``grad``: tracejit's gradient of sum(results * w) against autograd's (NumPy rebound to
autograd.numpy) or, where autograd cannot run the code (in-place writes), central differences
of eager NumPy in float64; ``ratio``: NumPy time / jit time at the case's big size (medians of
interleaved runs, benchmarks/timing.py; compile time not counted). The summary counts a case
as passing when it runs, matches NumPy and (if differentiable) has a matching gradient.
"""
from __future__ import annotations

import argparse
import copy
import time

import numpy as np

import tracejit as tj

from ..timing import compare
from . import autograd_code, cs231n, min_char_rnn, npbench, numpy_ml, picogpt  # noqa: F401
from .case import CASES, NOT_WRITTEN, OUT_OF_SCOPE, SOURCES
from .slow_reasons import slow_reason
from .check import (grad_error, jit_grad, leaves, max_rel_error, outputs, reference_grad,
                    tolerance)

GRAD_TOL = {"autograd": 1e-6, "fd": 1e-4}


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:90] if text else ''}"


def check_case(c, backend=None, timed=True, grads=True) -> dict:
    """One row: does it run, its error against NumPy, its gradient's, its speed ratio."""
    row = {"case": c.name, "source": c.source, "runs": "yes", "err": None, "grad": "-",
           "grad_err": None, "ratio": None, "numpy_us": None, "ok": False}
    args = c.make(np.random.default_rng(0), c.small)
    want = outputs(c.fn, args)
    jitted = tj.jit(c.fn, static_argnums=c.static or None, backend=backend, tiered=False)
    try:
        got = outputs(jitted, args)
    except Exception as e:                                  # noqa: BLE001
        row["runs"] = _first_line(e)
        return row
    row["err"], bad = max_rel_error(got, want)
    if bad:
        row["runs"] = f"wrong results: {bad}"
    ok = not bad and row["err"] <= tolerance(want)
    if c.grad and grads:
        try:
            ref, how = reference_grad(c.fn, args)
            row["grad"] = how
            row["grad_err"] = grad_error(jit_grad(c.fn, args, backend), ref)
            ok = ok and row["grad_err"] <= GRAD_TOL[how.split()[0]]
        except Exception as e:                              # noqa: BLE001
            row["grad"] = _first_line(e)
            ok = False
    row["ok"] = ok
    if timed:
        big = c.make(np.random.default_rng(1), c.big)
        try:
            jitted(*copy.deepcopy(big))       # compile; the copy keeps `big` unwritten
            # a case that writes its arguments would otherwise run on its own output (a
            # Cholesky of a factor fails), so both sides get a fresh copy per call (same cost)
            fresh = (lambda: copy.deepcopy(big)) if _writes_arguments(c, big) else (lambda: big)
            med = compare({"numpy": lambda: c.fn(*fresh()), "jit": lambda: jitted(*fresh())},
                          repeat=9, rounds=3, pause=0.05)
            row["ratio"] = med["numpy"] / med["jit"]
            row["numpy_us"] = med["numpy"] * 1e6
        except Exception as e:                              # noqa: BLE001
            row["ratio"] = _first_line(e)
    return row


def _writes_arguments(c, args) -> bool:
    after = copy.deepcopy(args)
    c.fn(*after)
    return any(isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=True)
               for a, b in zip(leaves(args), leaves(after)))


def _fmt(x, spec):
    return "" if x is None else (x if isinstance(x, str) else format(x, spec))


def summary(rows) -> str:
    n, ok = len(rows), sum(r["ok"] for r in rows)
    run = sum(r["runs"] == "yes" for r in rows)
    lines = [f"{ok}/{n} cases pass ({100 * ok / max(n, 1):.1f} %): run under jit with NumPy's "
             f"results and a matching gradient; {run}/{n} run ({100 * run / max(n, 1):.1f} %)"]
    for s in SOURCES:
        mine = [r for r in rows if r["source"] == s]
        if mine:
            lines.append(f"  {s}: {sum(r['ok'] for r in mine)}/{len(mine)}")
    lines.append(f"out of scope (Python control flow over array values), not counted: "
                 f"{len(OUT_OF_SCOPE)}: " + ", ".join(n for n, _, _ in OUT_OF_SCOPE))
    if NOT_WRITTEN:
        lines.append("in scope but not written: " + ", ".join(n for n, _, _ in NOT_WRITTEN))
    return "\n".join(lines)


def main(argv=None, backend=None, timed=True, grads=True):
    print(f"\nReal NumPy code under jit ({time.strftime('%Y-%m-%d')}; backend "
          f"{backend or tj.config.backend}, untiered)")
    print("| case | source | runs | err | gradient vs | grad err | numpy/jit | numpy us | "
          "why below 1.0 |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows, t0 = [], time.perf_counter()
    with np.errstate(all="ignore"):
        for c in sorted(CASES, key=lambda c: SOURCES.index(c.source)):
            if argv and not any(a in c.name or a == c.source for a in argv):
                continue
            r = check_case(c, backend, timed, grads)
            rows.append(r)
            print(f"| {r['case']} | {r['source']} | {r['runs']} | {_fmt(r['err'], '.1e')} | "
                  f"{r['grad']} | {_fmt(r['grad_err'], '.1e')} | {_fmt(r['ratio'], '.2f')} | "
                  f"{_fmt(r['numpy_us'], '.0f')} | {slow_reason(r)} |",
                  flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s in all")
    print(summary(rows))
    return rows


def _cli():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="cases whose name contains one of these, or sources")
    p.add_argument("--backend", default=None, help="numba (default), numpy or interpreter")
    p.add_argument("--no-time", action="store_true", help="skip the timing at the big size")
    p.add_argument("--no-grad", action="store_true",
                   help="skip the gradient checks (the ratios alone, in half the time)")
    a = p.parse_args()
    main(a.names, a.backend, not a.no_time, not a.no_grad)
    return 0
