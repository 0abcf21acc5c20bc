"""Benchmark: the single-pass analysis set against one memory pass over the maps, in one run.

    python bench/analysis.py [--layers 6 --heads 12 --tokens 512 --repeats 25]

Random row-stochastic maps ``[layer, head, query, key]`` float32, validated once outside the
timings. The baseline is ``weights.sum()`` (one sweep over the tensor). The analysis set is
``attnscope.analysis.overview.overview``: one fused pass, then the shift scan +-8, implied kernels and R^2,
head types, attention distance, entropy / normalised entropy / effective keys / top-1 with the
sharpening slope, and rollout importance of the CLS row (a vector chain; the full ``R^l``
matrices and the consecutive-layer JS/cosine, computed on first use, are timed separately as
context). Timings alternate between the two so that load on a shared machine hits both alike; the
ratio uses the best of ``repeats`` runs each (medians printed too), and a CPU-time ratio is printed
as well. Peak memory: tracemalloc over one analysis call (numpy reports its buffers to tracemalloc)
and the process's max RSS. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc

import numpy as np  # noqa: E402

from attnscope.analysis.evolution import layer_similarity  # noqa: E402
from attnscope.analysis.maps import AttentionMaps  # noqa: E402
from attnscope.analysis.overview import overview  # noqa: E402
from attnscope.analysis.rollout import rollout  # noqa: E402


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--workers", type=int, default=None, help="threads (default: one per core)")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    shape = (args.layers, args.heads, args.tokens, args.tokens)
    w = rng.random(shape, dtype=np.float32)
    w /= w.sum(axis=-1, keepdims=True)
    n = args.tokens
    maps = AttentionMaps(w, tokens=[f"t{i}" for i in range(n)], special=(0, n - 1))  # validated once
    print(f"maps {shape} float32, {w.nbytes / 2**20:.1f} MiB; workers={args.workers or 'auto'}")

    run = lambda: overview(maps, workers=args.workers)  # noqa: E731
    base = lambda: maps.weights.sum()  # noqa: E731
    run(), base()  # warm up caches of offset tables and the thread pool's imports
    t_base, t_run = [], []
    for _ in range(args.repeats):
        t_base.append(_timed(base))
        t_run.append(_timed(run))
    b, r = min(t_base), min(t_run)
    mb, mr = statistics.median(t_base), statistics.median(t_run)
    print(f"one memory pass (weights.sum): best {b * 1e3:7.2f} ms  median {mb * 1e3:7.2f} ms")
    print(f"analysis set (overview):       best {r * 1e3:7.2f} ms  median {mr * 1e3:7.2f} ms")
    print(f"RATIO analysis / memory pass: {r / b:.2f}x (best)  {mr / mb:.2f}x (median)")

    # context, not part of the ratio
    xlogx = min(_timed(lambda: (w * np.log(w + np.float32(1e-30))).sum(-1)) for _ in range(3))
    full = min(_timed(lambda: rollout(maps)) for _ in range(3))
    one_worker = min(_timed(lambda: overview(maps, workers=1)) for _ in range(5))
    print(
        f"context: plain numpy x*log(x) row sums {xlogx / b:.1f}x; full rollout matrices R^l "
        f"(matmul chain) {full / b:.1f}x; overview with 1 thread {one_worker / b:.2f}x"
    )

    ov = overview(maps, workers=args.workers)
    sim = min(_timed(lambda: layer_similarity(ov.evolution.head_mean)) for _ in range(3))
    print(f"context: consecutive-layer JS + cosine (evolution.js_next, computed on first use) {sim / b:.2f}x")
    cpu_b = min(_cpu(base) for _ in range(args.repeats))
    cpu_r = min(_cpu(run) for _ in range(args.repeats))
    print(f"CPU-time ratio (process_time, all threads; less sensitive to other load): {cpu_r / cpu_b:.2f}x")

    tracemalloc.start()
    overview(maps, workers=args.workers)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(
        f"peak memory of one analysis call (tracemalloc): {peak / 2**20:.1f} MiB "
        f"({peak / w.nbytes:.2f}x the maps); process max RSS {rss:.0f} MiB"
    )


if __name__ == "__main__":
    main()
