"""Job kinds: dataset-level work (census, faithfulness, ...) split into shards of examples.

A **sharded** kind (``register_sharded_job_kind``) says how many examples its params cover
(``size``), computes one shard ``[start, stop)`` of them into a JSON-able partial result
(``run_shard(params, models, start, stop, progress)``, ``models.get(name)`` gives a loaded model),
and builds the final result from every partial in shard order (``merge(params, partials)``). The
job's thread (``server/jobs/manager.py``) runs the shards in-process or on Ray workers
(``server/jobs/shards.py``, ``server/jobs/ray_shards.py``), saves each partial in the database as a
checkpoint, and merges; so a job resumes after a crash from its last saved shard, and the result is
the same however and wherever the shards ran. ``shard_size`` is part of the kind, never of the
executor: the same params always give the same shards. Write ``merge`` so that it only folds the
partials (Chan's update of running statistics, concatenation of per-example records).

A **whole** kind (``register_job_kind(name, params_model, runner)``) runs as one shard, in-process:
``runner(params, service, progress)`` returns the result. ``progress(done, total)`` raises
``JobCancelled`` when the job was cancelled. When a result has ``"rows"`` (flat dicts) it can be
downloaded as CSV. A kind's ``params_model`` lives in ``attnscope.server.schemas.jobs`` (pure
pydantic), its result model in ``attnscope.server.schemas.job_results`` (``JOB_RESULTS``: the result
route validates with it, and its docstring says how a new kind adds one); its ``check(params)``
runs the checks that need the registries and raises ``ParamsError`` (a 422 naming the parameter);
its ``resolve(params, models)``, where a kind has one, runs once at submit with the loaded model and
returns the params the job stores (what depends on the model is fixed there: the circuit job's
capitals/IOI items the model solves, its edge names checked against the model's graph), so every
shard, on any worker and after a resume, reads the same set. Guide: ``docs/guide/census.md``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from attnscope.server.jobs.records import Job  # noqa: F401  (what routes show)

Progress = Callable[[int, int], None]
Runner = Callable[[Any, Any, Progress], dict]


class Models(Protocol):
    """What a shard gets its models from (the API's ``ModelCache``, or a Ray actor's)."""

    def get(self, name: str) -> Any: ...


ShardRunner = Callable[[Any, Models, int, int, Progress], dict]
Merge = Callable[[Any, list[dict]], dict]


@dataclass(frozen=True)
class JobKind:
    name: str
    params_model: type[BaseModel]
    description: str = ""
    runner: Runner | None = None  # a whole kind
    size: Callable[[Any], int] | None = None  # a sharded kind: examples covered by these params
    run_shard: ShardRunner | None = None
    merge: Merge | None = None
    shard_size: int = 25
    check: Callable[[Any], None] | None = None  # checks that need the registries; raises ParamsError
    resolve: Callable[[Any, Models], Any] | None = None  # at submit, with the model: the params stored

    def validate(self, params: dict) -> BaseModel:
        """``params`` as this kind's model: a ``ValidationError`` or ``ParamsError`` says what to change."""
        model = self.params_model.model_validate(params)
        if self.check is not None:
            self.check(model)
        return model

    @property
    def sharded(self) -> bool:
        return self.run_shard is not None

    def shards(self, params: BaseModel) -> list[tuple[int, int]]:
        """``[(start, stop)]`` of every shard (one shard of one unit for a whole kind)."""
        if not self.sharded:
            return [(0, 1)]
        n = int(self.size(params))
        return [(a, min(a + self.shard_size, n)) for a in range(0, n, self.shard_size)]


JOB_KINDS: dict[str, JobKind] = {}


class ParamsError(ValueError):
    """A job's params passed their model but not a kind's own check; the message names the parameter."""


def register_job_kind(
    name: str,
    params_model: type[BaseModel],
    runner: Runner,
    description: str = "",
    check: Callable[[Any], None] | None = None,
) -> None:
    """A kind that runs whole, in-process (``runner(params, service, progress) -> dict``)."""
    JOB_KINDS[name] = JobKind(name, params_model, description, runner=runner, check=check)


def register_sharded_job_kind(
    name: str,
    params_model: type[BaseModel],
    *,
    size: Callable[[Any], int],
    run_shard: ShardRunner,
    merge: Merge,
    description: str = "",
    shard_size: int = 25,
    check: Callable[[Any], None] | None = None,
    resolve: Callable[[Any, Models], Any] | None = None,
) -> None:
    """A kind split into shards of ``shard_size`` examples (see the module docstring). ``run_shard``
    and ``merge`` must be importable module-level functions (Ray ships them to workers by name)."""
    if shard_size < 1:
        raise ValueError("shard_size must be at least 1")
    JOB_KINDS[name] = JobKind(
        name, params_model, description, size=size, run_shard=run_shard, merge=merge, shard_size=shard_size,
        check=check, resolve=resolve,
    )  # fmt: skip


class JobCancelled(Exception):
    """Raised inside a runner's progress callback when the job was cancelled."""


def rows_to_csv(rows: list[dict]) -> str:
    """Flat dict rows as CSV text (columns in first-seen order)."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()
