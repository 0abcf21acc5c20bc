"""Background jobs for dataset-level work (census, faithfulness, ...), with progress.

A job kind is registered once with ``register_job_kind(name, params_model, runner)``; ``runner``
gets the validated params, the ``RunService`` (models and runs) and a ``progress(done, total)``
callback, and returns a JSON-able dict. When the dict has ``"rows"`` (a list of flat dicts) the
result can also be downloaded as CSV. Jobs run one at a time in a worker thread (model work is
CPU/GPU bound), are kept in a bounded store, and a failure is recorded, never raised into the
server.
"""

from __future__ import annotations

import csv
import io
import logging
import threading
import time
import traceback
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
Runner = Callable[[Any, Any, Progress], dict]


@dataclass(frozen=True)
class JobKind:
    name: str
    params_model: type[BaseModel]
    runner: Runner
    description: str = ""


JOB_KINDS: dict[str, JobKind] = {}


def register_job_kind(name: str, params_model: type[BaseModel], runner: Runner, description: str = "") -> None:
    JOB_KINDS[name] = JobKind(name, params_model, runner, description)


class JobCancelled(Exception):
    """Raised inside a runner's progress callback when the job was cancelled."""


@dataclass
class Job:
    id: str
    kind: str
    params: dict
    status: str = "queued"  # queued | running | done | failed | cancelled
    done: int = 0
    total: int = 0
    message: str = ""
    result: dict | None = None
    error: str | None = None
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    cancel_requested: bool = False

    @property
    def progress(self) -> float:
        if self.status == "done":
            return 1.0
        return self.done / self.total if self.total else 0.0


class JobStore:
    """Submit, track and keep jobs (bounded: the oldest finished jobs are dropped first)."""

    def __init__(self, service: Any, max_jobs: int = 100, workers: int = 1):
        self.service = service
        self.max_jobs = max_jobs
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="attnscope-job")

    def submit(self, kind: str, params: BaseModel) -> Job:
        job = Job(id=uuid.uuid4().hex[:16], kind=kind, params=params.model_dump())
        with self._lock:
            self._jobs[job.id] = job
            self._evict()
        self._pool.submit(self._run, job, JOB_KINDS[kind], params)
        return job

    def _evict(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.status in ("done", "failed", "cancelled")]
        while len(self._jobs) > self.max_jobs and finished:
            self._jobs.pop(finished.pop(0))

    def _run(self, job: Job, kind: JobKind, params: BaseModel) -> None:
        job.status, job.started = "running", time.time()

        def progress(done: int, total: int) -> None:
            if job.cancel_requested:
                raise JobCancelled()
            job.done, job.total = int(done), int(total)

        try:
            job.result = kind.runner(params, self.service, progress)
            job.status = "done"
        except JobCancelled:
            job.status, job.message = "cancelled", "cancelled on request"
        except (ValueError, LookupError, PermissionError) as exc:  # the request cannot be met: say why
            log.warning("job %s (%s) failed: %s: %s", job.id, job.kind, type(exc).__name__, exc)
            job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a bug: recorded for the user, traceback in the log; the server keeps serving
            log.error("job %s (%s) failed:\n%s", job.id, job.kind, traceback.format_exc())
            job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            job.finished = time.time()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def list(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def cancel(self, job_id: str) -> Job | None:
        job = self.get(job_id)
        if job is not None and job.status in ("queued", "running"):
            job.cancel_requested = True
        return job

    def shutdown(self) -> None:
        for job in list(self._jobs.values()):
            job.cancel_requested = True
        self._pool.shutdown(wait=False, cancel_futures=True)


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
