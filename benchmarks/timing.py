"""The one way benchmarks time things: warm up, then the median of repeated calls, in ms."""
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
