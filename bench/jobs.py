"""Data-set jobs: a census in-process vs on Ray, and what the job record's progress writes cost.

    python bench/jobs.py                          # census of 2,000 SST-2 (train) sentences on MiniLM
    python bench/jobs.py --n 300 --db-n 100       # a quick look

1. The same census (same params, same shards of 25, same merge) run by the in-process executor (one
   process, torch's default threads) and by the Ray executor on a local Ray with ``--workers`` actors
   (one CPU and ``--ray-threads`` torch threads each), timed one after the other in this run. Ray's
   start-up (actors started, MiniLM loaded in each) is timed apart from the job.
2. A census job through the real job manager and its SQLite database, with progress writes at the
   API's interval (0.5 s), at every report (interval 0), and without any (shard checkpoints only),
   interleaved ``--db-repeats`` times; medians and ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def census_params(n: int, seed: int = 0):
    from attnscope.server.schemas.jobs import CensusParams

    return CensusParams(model="minilm", dataset="sst2", split="train", n=n, seed=seed)


def in_process_vs_ray(n: int, workers: int, ray_threads: int) -> dict:
    from attnscope.models.loading import ModelCache
    from attnscope.server.jobs.dataset_kinds import register_job_kinds
    from attnscope.server.jobs.kinds import JOB_KINDS
    from attnscope.server.jobs.ray_shards import RayExecutor
    from attnscope.server.jobs.shards import InProcessExecutor, run_kind

    register_job_kinds()
    kind, params = JOB_KINDS["census"], census_params(n)
    kind.shards(params)  # the data set sample, outside the timings

    class _Service:
        models = ModelCache("cpu")

    _Service.models.get("minilm")
    t = time.perf_counter()
    local = run_kind(kind, params, InProcessExecutor(_Service))
    t_local = time.perf_counter() - t

    t = time.perf_counter()
    ray_exec = RayExecutor(None, workers=workers, device="cpu", threads=ray_threads)
    warm = run_kind(kind, census_params(workers * kind.shard_size, seed=1), ray_exec)  # loads MiniLM per actor
    t_start = time.perf_counter() - t
    try:
        t = time.perf_counter()
        on_ray = run_kind(kind, params, ray_exec)
        t_ray = time.perf_counter() - t
    finally:
        ray_exec.close()
    assert warm["n"] == workers * kind.shard_size
    import numpy as np

    diff = max(
        float(np.nanmax(np.abs(np.subtract(local["metrics"][m][s], on_ray["metrics"][m][s]))))
        for m in local["metrics"]
        for s in ("mean", "std")
    )
    return {"n": n, "in_process_s": t_local, "ray_s": t_ray, "ray_start_s": t_start, "max_diff": diff}


def db_overhead(n: int, repeats: int) -> dict:
    from attnscope.models.loading import ModelCache
    from attnscope.server.db.engine import open_database
    from attnscope.server.jobs.dataset_kinds import register_job_kinds
    from attnscope.server.jobs.manager import JobManager

    class _Service:
        models = ModelCache("cpu")

    register_job_kinds()
    _Service.models.get("minilm")
    params = census_params(n, seed=2)
    times: dict[str, list[float]] = {"none": [], "api": [], "every": []}
    intervals = {"none": float("inf"), "api": 0.5, "every": 0.0}
    for _ in range(repeats):
        for mode, interval in intervals.items():
            with tempfile.TemporaryDirectory() as folder:
                db = open_database(None, folder)
                manager = JobManager(_Service, db, progress_interval=interval)
                manager.start()
                t = time.perf_counter()
                job = manager.submit("census", params)
                while manager.get(job.id).status in ("queued", "running"):
                    time.sleep(0.005)
                times[mode].append(time.perf_counter() - t)
                assert manager.get(job.id).status == "done"
                manager.shutdown()
                db.close()
    med = {m: statistics.median(v) for m, v in times.items()}
    return {"n": n, "repeats": repeats, **{f"{m}_s": v for m, v in med.items()}}


def write_cost(n: int = 500) -> float:
    """Seconds per progress write (one UPDATE of the job's row in SQLite WAL), mean of ``n``."""
    from attnscope.server.db.engine import open_database
    from attnscope.server.jobs.records import JobRecords

    with tempfile.TemporaryDirectory() as folder:
        db = open_database(None, folder)
        records = JobRecords(db)
        records.create("bench", "census", {})
        t = time.perf_counter()
        for i in range(n):
            records.progress("bench", i)
        cost = (time.perf_counter() - t) / n
        db.close()
    return cost


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=2000, help="census examples (SST-2 train sample)")
    p.add_argument("--workers", type=int, default=2, help="Ray actors")
    p.add_argument("--ray-threads", type=int, default=1, help="torch threads per actor")
    p.add_argument("--db-n", type=int, default=200, help="census examples of the database-overhead job")
    p.add_argument("--db-repeats", type=int, default=3)
    p.add_argument("--only-writes", action="store_true", help="only the cost of one progress write")
    a = p.parse_args(argv)
    import torch

    w = sys.stdout.write
    cost = write_cost()
    w(
        f"one progress write (SQLite WAL): {cost * 1e3:.2f} ms; at the API's at most 2 writes/s that is "
        f"{2 * cost * 100:.2f}% of a job's wall time\n"
    )
    if a.only_writes:
        return 0
    w(f"machine: {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()} in-process\n")
    r = in_process_vs_ray(a.n, a.workers, a.ray_threads)
    w(
        f"census of {r['n']} SST-2 sentences on MiniLM: in-process {r['in_process_s']:.1f} s, "
        f"Ray ({a.workers} actors x {a.ray_threads} thread) {r['ray_s']:.1f} s "
        f"(+ {r['ray_start_s']:.1f} s start-up, MiniLM loaded per actor); "
        f"speed-up in-process/Ray = {r['in_process_s'] / r['ray_s']:.2f}x; "
        f"{r['n'] / r['in_process_s']:.1f} vs {r['n'] / r['ray_s']:.1f} examples/s; "
        f"largest difference of a per-head mean or std: {r['max_diff']:.1e} (float32 rounding: the actors "
        f"run {a.ray_threads} thread(s), in-process {torch.get_num_threads()})\n"
    )
    d = db_overhead(a.db_n, a.db_repeats)
    w(
        f"census job of {d['n']} examples through the job manager (SQLite, median of {d['repeats']}): "
        f"no progress writes {d['none_s']:.2f} s, every 0.5 s (the API) {d['api_s']:.2f} s "
        f"(ratio {d['api_s'] / d['none_s']:.4f}), at every report {d['every_s']:.2f} s "
        f"(ratio {d['every_s'] / d['none_s']:.4f})\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
