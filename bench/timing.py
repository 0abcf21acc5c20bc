"""Timing shared by the benchmarks: median wall time of repeated calls after one warm-up."""

from __future__ import annotations

import statistics
import time


def timeit(fn, repeats: int) -> float:
    """Median seconds of ``repeats`` calls of ``fn`` (one untimed warm-up call first)."""
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)
