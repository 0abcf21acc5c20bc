"""A real, tiny sharded job kind for the job machinery's tests: sums of squares over examples.

Module-level functions (Ray workers import them by name). ``gate`` makes a shard wait for a file so a
test can stop a job between shards.
"""

from __future__ import annotations

import os
import time

from pydantic import BaseModel, Field


class SumParams(BaseModel):
    n: int = Field(..., ge=1, le=10_000)
    gate: str | None = None  # shards with index >= gate_shard wait until this file exists
    gate_shard: int = 1
    fail_shard: int | None = None
    sleep: float = Field(0.0, ge=0, le=1, description="seconds per example (progress inside a shard)")


def size(params: SumParams) -> int:
    return params.n


def run_shard(params: SumParams, models, start: int, stop: int, progress) -> dict:
    if params.gate and start // 10 >= params.gate_shard:
        while not os.path.exists(params.gate):
            progress(0, stop - start)  # raises when the job is cancelled or the server stops
            time.sleep(0.02)
    if params.fail_shard is not None and start // 10 == params.fail_shard:
        raise ValueError(f"planted failure in shard {params.fail_shard}")
    for i in range(start, stop):
        time.sleep(params.sleep)
        progress(i - start + 1, stop - start)
    return {"examples": list(range(start, stop)), "sum": sum(i * i for i in range(start, stop)), "pid": os.getpid()}


def merge(params: SumParams, partials: list[dict]) -> dict:
    examples = [e for p in partials for e in p["examples"]]
    return {"n": len(examples), "examples": examples, "sum": sum(p["sum"] for p in partials), "rows": [{"n": 1}]}


def register() -> None:
    from attnscope.server.jobs.kinds import register_sharded_job_kind

    register_sharded_job_kind(
        "sumsq-test", SumParams, size=size, run_shard=run_shard, merge=merge, description="test", shard_size=10
    )
