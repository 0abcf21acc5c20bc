"""Jobs and their shard checkpoints in the database (the only module that writes the two tables).

Every method is one short transaction; the job's thread, the routes and start-up share it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, func, select, update

from attnscope.server.db.engine import Database
from attnscope.server.db.models import JobRecord, ShardRecord, dumps

ACTIVE = ("queued", "running")
FINISHED = ("done", "failed", "cancelled")


@dataclass
class Job:
    """A job as read from the database (what routes show)."""

    id: str
    kind: str
    params: dict
    status: str = "queued"  # queued | running | done | failed | cancelled | interrupted
    done: int = 0
    total: int = 0
    shards_total: int = 0
    shards_done: int = 0
    message: str = ""
    error: str | None = None
    worker: str | None = None
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    has_rows: bool = False

    @property
    def progress(self) -> float:
        if self.status == "done":
            return 1.0
        return min(1.0, self.done / self.total) if self.total else 0.0


@dataclass(frozen=True)
class ShardCheckpoint:
    index: int
    start: int
    stop: int
    partial: dict
    worker: str | None = None  # where it ran (as read back; saving takes the worker separately)


def _job(rec: JobRecord, shards_done: int) -> Job:
    has_rows = False
    if rec.result is not None and rec.status == "done":
        result = json.loads(rec.result)
        has_rows = isinstance(result, dict) and bool(result.get("rows"))
    return Job(
        id=rec.id,
        kind=rec.kind,
        params=json.loads(rec.params),
        status=rec.status,
        done=rec.done,
        total=rec.total,
        shards_total=rec.shards_total,
        shards_done=shards_done,
        message=rec.message,
        error=rec.error,
        worker=rec.worker,
        created=rec.created,
        started=rec.started,
        finished=rec.finished,
        has_rows=has_rows,
    )


class JobRecords:
    """Create, read and move jobs through their states; keep shard checkpoints."""

    def __init__(self, db: Database):
        self.db = db

    def _shards_done(self, s, job_id: str) -> int:
        return s.scalar(select(func.count()).select_from(ShardRecord).where(ShardRecord.job_id == job_id)) or 0

    def create(self, job_id: str, kind: str, params: dict) -> Job:
        rec = JobRecord(
            id=job_id,
            kind=kind,
            params=dumps(params),
            status="queued",
            done=0,
            total=0,
            shards_total=0,
            message="",
            cancel_requested=False,
            created=time.time(),
        )
        with self.db.session() as s, s.begin():
            s.add(rec)
        return _job(rec, 0)

    def get(self, job_id: str) -> Job | None:
        with self.db.session() as s:
            rec = s.get(JobRecord, job_id)
            return None if rec is None else _job(rec, self._shards_done(s, job_id))

    def list(self, limit: int = 100, kind: str | None = None, status: str | None = None) -> list[Job]:
        """The newest ``limit`` jobs (optionally of one kind / status), oldest first."""
        q = select(JobRecord).order_by(JobRecord.created.desc()).limit(limit)
        if kind:
            q = q.where(JobRecord.kind == kind)
        if status:
            q = q.where(JobRecord.status == status)
        with self.db.session() as s:
            recs = list(s.scalars(q))
            counts = dict(
                s.execute(
                    select(ShardRecord.job_id, func.count())
                    .where(ShardRecord.job_id.in_([r.id for r in recs]))
                    .group_by(ShardRecord.job_id)
                ).all()
            )
            return [_job(r, counts.get(r.id, 0)) for r in reversed(recs)]

    def count(self, *statuses: str) -> int:
        with self.db.session() as s:
            return s.scalar(select(func.count()).select_from(JobRecord).where(JobRecord.status.in_(statuses))) or 0

    def ids(self, status: str) -> list[str]:
        with self.db.session() as s:
            return list(s.scalars(select(JobRecord.id).where(JobRecord.status == status).order_by(JobRecord.created)))

    def recent_durations(self, n: int = 20) -> list[float]:
        q = (
            select(JobRecord.finished - JobRecord.started)
            .where(JobRecord.status == "done", JobRecord.started.is_not(None))
            .order_by(JobRecord.finished.desc())
            .limit(n)
        )
        with self.db.session() as s:
            return [float(d) for d in s.scalars(q) if d is not None]

    def result(self, job_id: str) -> Any:
        with self.db.session() as s:
            text = s.scalar(select(JobRecord.result).where(JobRecord.id == job_id))
            return None if text is None else json.loads(text)

    def _update(self, job_id: str, *where, **values) -> int:
        with self.db.session() as s, s.begin():
            return s.execute(update(JobRecord).where(JobRecord.id == job_id, *where).values(**values)).rowcount

    def start(self, job_id: str, worker: str, total: int, shards_total: int, done: int) -> bool:
        """queued -> running (False when the job was cancelled meanwhile)."""
        n = self._update(
            job_id,
            JobRecord.status == "queued",
            status="running",
            worker=worker,
            total=total,
            shards_total=shards_total,
            done=done,
            started=time.time(),
            message="",
            error=None,
        )
        return n == 1

    def progress(self, job_id: str, done: int, total: int | None = None) -> None:
        values = {"done": int(done)} if total is None else {"done": int(done), "total": int(total)}
        self._update(job_id, **values)

    def save_shard(self, job_id: str, shard: ShardCheckpoint, worker: str, done: int | None) -> None:
        """The shard's partial result and the job's progress, in one transaction."""
        with self.db.session() as s, s.begin():
            s.add(
                ShardRecord(
                    job_id=job_id,
                    index=shard.index,
                    start=shard.start,
                    stop=shard.stop,
                    partial=dumps(shard.partial),
                    worker=worker,
                    finished=time.time(),
                )
            )
            if done is not None:
                s.execute(update(JobRecord).where(JobRecord.id == job_id).values(done=int(done)))

    def shards(self, job_id: str) -> list[ShardCheckpoint]:
        with self.db.session() as s:
            recs = s.scalars(select(ShardRecord).where(ShardRecord.job_id == job_id).order_by(ShardRecord.index))
            return [ShardCheckpoint(r.index, r.start, r.stop, json.loads(r.partial), r.worker) for r in recs]

    def finish(self, job_id: str, status: str, *, result: Any = None, error: str | None = None, message: str = ""):
        values = {"status": status, "finished": time.time(), "error": error, "message": message}
        if result is not None:
            values["result"] = dumps(result)
        self._update(job_id, **values)

    def request_cancel(self, job_id: str) -> None:
        self._update(job_id, cancel_requested=True)

    def cancel_requested(self, job_id: str) -> bool:
        with self.db.session() as s:
            return bool(s.scalar(select(JobRecord.cancel_requested).where(JobRecord.id == job_id)))

    def cancel_queued(self, job_id: str) -> bool:
        """queued -> cancelled at once (False when it is no longer queued)."""
        n = self._update(
            job_id,
            JobRecord.status == "queued",
            status="cancelled",
            finished=time.time(),
            message="cancelled while queued",
        )
        return n == 1

    def requeue_interrupted(self, job_id: str) -> bool:
        """interrupted or cancelled -> queued (resume: its saved shards are kept, the rest run); False
        when the job is neither."""
        n = self._update(
            job_id,
            JobRecord.status.in_(("interrupted", "cancelled")),
            status="queued",
            finished=None,
            cancel_requested=False,
            message="",
        )
        return n == 1

    def interrupt_running(self) -> list[str]:
        """At start-up: every ``running`` job (its process died) becomes ``interrupted``, with the reason."""
        ids = self.ids("running")
        for job_id in ids:
            self.interrupt(job_id)
        return ids

    def interrupt(self, job_id: str) -> bool:
        """running -> interrupted, saying how many shards were saved and how to resume. Its ``done``
        becomes the examples those shards hold: progress inside the shard that was running is lost
        with the process, and a resume counts from the saved shards (``JobManager._run``)."""
        with self.db.session() as s:
            done = self._shards_done(s, job_id)
            total = s.scalar(select(JobRecord.shards_total).where(JobRecord.id == job_id)) or 0
            saved = s.scalar(
                select(func.coalesce(func.sum(ShardRecord.stop - ShardRecord.start), 0)).where(
                    ShardRecord.job_id == job_id
                )
            )
        n = self._update(
            job_id,
            JobRecord.status == "running",
            status="interrupted",
            done=int(saved or 0),
            finished=time.time(),
            message=f"the API process stopped while this job ran; {done} of {total} shards were saved. "
            f"POST /api/v1/jobs/{job_id}/resume continues from the next shard",
        )
        return n == 1

    def delete_shards(self, job_id: str) -> None:
        with self.db.session() as s, s.begin():
            s.execute(delete(ShardRecord).where(ShardRecord.job_id == job_id))
