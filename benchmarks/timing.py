"""The one way benchmarks time things: warm up, then medians of repeated calls.

``compare`` times several implementations of one thing side by side. Each runs in blocks of
calls, the implementations taking turns, with a pause before each block: the thread pools
behind them (NumPy's OpenBLAS, PyTorch's and Numba's OpenMP workers) keep spinning for a while
after their last call, and on a 2-core machine a block started right after another library's
block runs against its spinning threads (measured: tracejit's MLP step 3.0 ms in blocks, 3.6 ms
right after NumPy's block). Calls within a block come back to back, as in a training loop.
"""
from __future__ import annotations

import statistics
import time


def median_ms(fn, repeat: int = 20, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def compare(fns: dict, repeat: int = 15, rounds: int = 3, pause: float = 0.1) -> dict:
    """Median seconds per call of each callable: ``rounds`` turns of ``repeat`` calls each
    (the first call of each turn is a warm-up and not counted), ``pause`` seconds before each
    turn so that other libraries' threads go back to sleep."""
    times = {k: [] for k in fns}
    per_round = max(1, -(-repeat // rounds))
    for _ in range(rounds):
        for name, fn in fns.items():
            time.sleep(pause)
            fn()
            for _ in range(per_round):
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}
