"""The job queue: admission, one job at a time in a worker thread, shard checkpoints in the database,
cancel, and resume of jobs a dead process left behind (``docs/guide/jobs.md``).

States: ``queued -> running -> done | failed | cancelled``; ``running -> interrupted`` when the process
stopped mid-job (found at start-up) or shut down; ``interrupted | cancelled -> queued`` on resume, which continues
after the last saved shard: saved shards are never run again and every example is counted once.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
import traceback
import uuid
from typing import Any

from pydantic import BaseModel

from attnscope.server.db.engine import Database
from attnscope.server.jobs.kinds import JOB_KINDS, JobCancelled, JobKind
from attnscope.server.jobs.records import Job, JobRecords, ShardCheckpoint
from attnscope.server.jobs.shards import InProcessExecutor

log = logging.getLogger(__name__)


class JobInterrupted(Exception):
    """The API is shutting down: the job stops after saving what it finished, and can be resumed."""


class QueueFullError(Exception):
    """The queue holds ``queued`` jobs already (the limit); retry after ``retry_after`` seconds."""

    def __init__(self, queued: int, limit: int, retry_after: int):
        self.queued, self.limit, self.retry_after = queued, limit, retry_after
        super().__init__(
            f"the job queue is full ({queued} jobs queued, limit {limit}); retry after {retry_after} s "
            "or cancel a queued job (POST /api/v1/jobs/{id}/cancel)"
        )


class NotResumableError(Exception):
    """Resume of a job that is not ``interrupted``."""


class _Sink:
    """Progress and checkpoints of one running job (throttled progress writes)."""

    def __init__(self, manager: JobManager, job_id: str, done: int, interval: float):
        self.m, self.job_id, self.saved_done, self.interval = manager, job_id, done, interval
        self.in_shard: dict[int, int] = {}
        self._whole: tuple[int, int] | None = None
        self._last = 0.0
        self._lock = threading.Lock()

    def check(self) -> None:
        if self.job_id in self.m._cancel:
            raise JobCancelled()
        if self.m._stopping.is_set():
            raise JobInterrupted()

    def _done(self) -> int:
        return self.saved_done + sum(self.in_shard.values())

    def progress(self, index: int, done: int) -> None:
        self.check()
        with self._lock:
            self.in_shard[index] = int(done)
            now = time.monotonic()
            if now - self._last < self.interval:
                return
            self._last = now
            value = self._done()
        self.m.records.progress(self.job_id, value)

    def whole_progress(self, done: int, total: int) -> None:
        self.check()
        self._whole = (int(done), int(total))
        now = time.monotonic()
        if now - self._last >= self.interval or done == total:
            self._last = now
            self.m.records.progress(self.job_id, done, total)

    def flush(self) -> None:
        """Write the last progress reported (a stopped job shows how far it got)."""
        if self._whole is not None:
            self.m.records.progress(self.job_id, *self._whole)
        else:
            self.m.records.progress(self.job_id, self._done())

    def shard_done(self, index: int, start: int, stop: int, partial: dict, worker: str) -> None:
        with self._lock:
            self.in_shard.pop(index, None)
            self.saved_done += stop - start
            value = None if self._whole is not None else self._done()  # a whole kind counts its own units
        self.m.records.save_shard(self.job_id, ShardCheckpoint(index, start, stop, partial), worker, value)


class JobManager:
    """Submit, run (one job at a time), cancel and resume jobs kept in the database."""

    def __init__(
        self,
        service: Any,
        db: Database,
        executor: Any = None,
        max_queued: int = 16,
        progress_interval: float = 0.5,
    ):
        self.service = service
        self.records = JobRecords(db)
        self.executor = executor or InProcessExecutor(service)
        self.max_queued = max_queued
        self.progress_interval = progress_interval
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._cancel: set[str] = set()
        self._stopping = threading.Event()
        self._admit = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="attnscope-jobs", daemon=True)

    def start(self) -> list[str]:
        """Mark the jobs a dead process left ``running`` as ``interrupted``, queue the ``queued``
        ones again, and start the worker thread. Returns the interrupted ids."""
        interrupted = self.records.interrupt_running()
        for job_id in interrupted:
            log.warning("job %s was running when the process stopped: marked interrupted", job_id)
        for job_id in self.records.ids("queued"):
            self._queue.put(job_id)
        self._thread.start()
        return interrupted

    def retry_after(self) -> int:
        """Seconds until a queue slot is likely free: the mean of recent jobs' run times (30 s without any)."""
        times = self.records.recent_durations()
        return max(1, math.ceil(sum(times) / len(times))) if times else 30

    def submit(self, kind: str, params: BaseModel) -> Job:
        with self._admit:
            queued = self.records.count("queued")
            if queued >= self.max_queued:
                raise QueueFullError(queued, self.max_queued, self.retry_after())
            job = self.records.create(uuid.uuid4().hex[:16], kind, params.model_dump(mode="json"))
        self._queue.put(job.id)
        return job

    def get(self, job_id: str) -> Job | None:
        return self.records.get(job_id)

    def list(self, limit: int = 100, kind: str | None = None, status: str | None = None) -> list[Job]:
        return self.records.list(limit, kind, status)

    def result(self, job_id: str) -> Any:
        return self.records.result(job_id)

    def cancel(self, job_id: str) -> Job | None:
        """A queued job is ``cancelled`` at once; a running one stops at its next progress report."""
        job = self.records.get(job_id)
        if job is None:
            return None
        if job.status == "queued" and self.records.cancel_queued(job_id):
            return self.records.get(job_id)
        if job.status in ("queued", "running"):
            self._cancel.add(job_id)
            self.records.request_cancel(job_id)
        return self.records.get(job_id)

    def resume(self, job_id: str) -> Job:
        """``interrupted | cancelled -> queued``; it continues after its last saved shard."""
        with self._admit:
            job = self.records.get(job_id)
            if job is None:
                raise LookupError(job_id)
            if not self.records.requeue_interrupted(job_id):
                raise NotResumableError(
                    f"job {job_id} is {job.status}; only an interrupted or cancelled job can be resumed "
                    "(a failed one: submit it again with POST /api/v1/jobs)"
                )
        self._queue.put(job_id)
        return self.records.get(job_id)

    def shutdown(self, wait: float = 5.0) -> None:
        """Stop taking work; a running job stops at its next progress report and is ``interrupted``."""
        self._stopping.set()
        self._queue.put(None)
        if self._thread.is_alive():
            self._thread.join(wait)
        self.executor.close()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            job_id = self._queue.get()
            if job_id is None:
                break
            try:
                self._run(job_id)
            except Exception:  # the database went away, ...: log it, keep the thread serving
                log.error("job %s could not be run:\n%s", job_id, traceback.format_exc())

    def _run(self, job_id: str) -> None:
        job = self.records.get(job_id)
        if job is None or job.status != "queued":
            return  # cancelled while queued
        kind: JobKind | None = JOB_KINDS.get(job.kind)
        try:
            if kind is None:
                raise LookupError(f"job kind {job.kind!r} is not registered in this server")
            params = kind.validate(job.params)
            bounds = kind.shards(params)
        except Exception as exc:  # never left queued: a missing data set (OSError), a bad parameter, a bug
            if not isinstance(exc, ValueError | LookupError | OSError):
                log.error("job %s (%s) could not start:\n%s", job_id, job.kind, traceback.format_exc())
            self.records.finish(job_id, "failed", error=f"{type(exc).__name__}: {exc}")
            return
        saved = {c.index for c in self.records.shards(job_id)}
        pending = [(i, a, b) for i, (a, b) in enumerate(bounds) if i not in saved]
        done = sum(b - a for i, (a, b) in enumerate(bounds) if i in saved) if kind.sharded else 0
        total = bounds[-1][1] if kind.sharded and bounds else 0
        if not self.records.start(job_id, self.executor.worker, total, len(bounds), done):
            return
        sink = _Sink(self, job_id, done, self.progress_interval)
        try:
            self.executor.run(kind, params, pending, sink)
            partials = [c.partial for c in self.records.shards(job_id)]
            result = kind.merge(params, partials) if kind.sharded else partials[0]
            self.records.finish(job_id, "done", result=result)
        except JobCancelled:
            self._stopped(sink, job_id, "cancelled", message="cancelled on request")
        except JobInterrupted:
            self._stopped(
                sink,
                job_id,
                "interrupted",
                message=f"the API shut down while this job ran; POST /api/v1/jobs/{job_id}/resume continues it",
            )
        except (ValueError, LookupError, PermissionError) as exc:  # the request cannot be met: say why
            log.warning("job %s (%s) failed: %s: %s", job_id, job.kind, type(exc).__name__, exc)
            self._stopped(sink, job_id, "failed", error=f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a bug: recorded for the user, traceback in the log; the server keeps serving
            log.error("job %s (%s) failed:\n%s", job_id, job.kind, traceback.format_exc())
            self._stopped(sink, job_id, "failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            self._cancel.discard(job_id)

    def _stopped(self, sink: _Sink, job_id: str, status: str, **fields) -> None:
        sink.flush()
        self.records.finish(job_id, status, **fields)
