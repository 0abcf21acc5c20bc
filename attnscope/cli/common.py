"""What the subcommands share: defaults from the settings (``ATTNSCOPE_*``, read by
``attnscope.server.config.Settings``), the Ray executor options, and a job kind's result computed on Ray."""

from __future__ import annotations

import argparse
import logging

log = logging.getLogger("attnscope")


def settings():
    """The settings the command line's defaults come from (``Settings()``: the environment as it is now)."""
    from attnscope.server.config import Settings

    return Settings()


def add_executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executor",
        default="in-process",
        choices=["in-process", "ray"],
        help="ray: shards run as Ray tasks on actors that hold the model (pip install 'attnscope[ray]')",
    )
    p.add_argument(
        "--ray-address",
        default=settings().ray_address or "",
        help="Ray cluster (host:6379) for --executor ray; empty: a local Ray on this machine (ATTNSCOPE_RAY_ADDRESS)",
    )
    p.add_argument(
        "--ray-workers",
        type=int,
        default=settings().ray_workers,
        help="Ray actors, each holding the model (ATTNSCOPE_RAY_WORKERS)",
    )
    p.add_argument(
        "--ray-threads",
        type=int,
        default=settings().ray_threads,
        help="torch threads per actor; 0: as many as this process uses (ATTNSCOPE_RAY_THREADS)",
    )


def write_job_files(out, result: dict, examples: list[dict]) -> list:
    """A job result's files: ``out`` (JSON), the per-row CSV beside it (``.csv``) and, when ``examples``
    has rows, the long-format ``OUT-examples.csv``. Returns the paths written."""
    import json
    from pathlib import Path

    from attnscope.server.jobs.kinds import rows_to_csv

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    written = [out, out.with_suffix(".csv")]
    written[1].write_text(rows_to_csv(result["rows"]))
    if examples:
        written.append(out.with_name(out.stem + "-examples.csv"))
        written[-1].write_text(rows_to_csv(examples))
    return written


class OneModel:
    """The ``Models`` of a job run in this process: the one loaded backend, whatever name is asked."""

    def __init__(self, backend):
        self.backend = backend

    def get(self, name: str):
        return self.backend


def in_process(kind_name: str, params, backend, progress) -> dict:
    """The job kind's result computed here on ``backend``: the same shards and merge as ``POST /jobs``
    with these (validated) params, so the same result."""
    from types import SimpleNamespace

    from attnscope.server.jobs.dataset_kinds import register_job_kinds
    from attnscope.server.jobs.kinds import JOB_KINDS
    from attnscope.server.jobs.shards import InProcessExecutor, run_kind

    register_job_kinds()
    return run_kind(
        JOB_KINDS[kind_name], params, InProcessExecutor(SimpleNamespace(models=OneModel(backend))), progress
    )


def on_ray(kind_name: str, params: dict, args: argparse.Namespace, progress) -> dict | None:
    """The job kind's result computed on Ray: the same shards and merge as the API's job with these
    params (so the same result). None (after logging why) when the params or the cluster are wrong."""
    from pydantic import ValidationError

    from attnscope.server.jobs.dataset_kinds import register_job_kinds
    from attnscope.server.jobs.kinds import JOB_KINDS
    from attnscope.server.jobs.ray_shards import RayExecutor, RayUnavailableError
    from attnscope.server.jobs.shards import run_kind

    register_job_kinds()
    kind = JOB_KINDS[kind_name]
    try:
        checked = kind.validate(params)
        executor = RayExecutor(
            args.ray_address or None,
            workers=args.ray_workers,
            device=getattr(args, "device", None),
            threads=args.ray_threads or None,
        )
    except (ValidationError, RayUnavailableError, ValueError) as exc:
        log.error("%s", exc)
        return None
    try:
        return run_kind(kind, checked, executor, progress)
    finally:
        executor.close()
