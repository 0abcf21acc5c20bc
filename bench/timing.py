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


def timeit_both(fn, repeats: int) -> tuple[float, float]:
    """Median ``(wall seconds, process CPU seconds)`` of ``repeats`` calls after one warm-up. On a
    shared, loaded machine CPU time is the steadier of the two (it ignores time spent waiting for
    a core), so benchmarks print ratios of both."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)
