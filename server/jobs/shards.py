"""Where a job's shards run. ``InProcessExecutor`` runs them one after another in the job's thread
(the default); ``server/jobs/ray_shards.py`` runs them as Ray tasks on actors that hold the model.

An executor's ``run(kind, params, pending, sink)`` computes every pending shard
``(index, start, stop)`` and hands each partial result to ``sink.shard_done`` (in any order: the
manager merges by index); it reports examples done inside a shard with ``sink.progress`` and stops
when ``sink.check()`` raises. In process, a shard also runs under a cancel token read from the sink,
so the model loops' ``check_cancelled`` (one forward batch apart, ``models/cancel.py``) stop a
cancelled or interrupted job between batches, not only at the shard's next progress report (a group
of examples scored in one call reports none for minutes on a loaded machine).
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Protocol

from pydantic import BaseModel

from attnscope.models.cancel import Cancelled, CancelToken, cancel_scope
from attnscope.server.jobs.kinds import JobKind


class ShardSink(Protocol):
    """The manager's side of a running job."""

    def check(self) -> None:
        """Raise ``JobCancelled`` (or ``JobInterrupted``) when the job must stop."""

    def progress(self, index: int, done: int) -> None:
        """``done`` examples of shard ``index`` are finished."""

    def whole_progress(self, done: int, total: int) -> None:
        """Progress of a whole (unsharded) kind, as its runner reports it."""

    def shard_done(self, index: int, start: int, stop: int, partial: dict, worker: str) -> None:
        """Shard ``index`` is finished: checkpoint it."""


def process_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class SinkToken(CancelToken):
    """A cancel token that asks the job's sink: set once ``sink.check()`` raises (cancel, shutdown)."""

    def __init__(self, sink: ShardSink):
        super().__init__()
        self.sink = sink

    @property
    def cancelled(self) -> bool:
        try:
            self.sink.check()
        except Exception as exc:  # JobCancelled or JobInterrupted
            self.reason = self.reason or type(exc).__name__
            return True
        return False


class InProcessExecutor:
    """Shards one after another in the job's thread, on the API's own loaded models."""

    name = "in-process"

    def __init__(self, service: Any):
        self.service = service

    @property
    def worker(self) -> str:
        return f"in-process@{process_name()}"

    def run(self, kind: JobKind, params: BaseModel, pending: list[tuple[int, int, int]], sink: ShardSink) -> None:
        for index, start, stop in pending:
            sink.check()
            try:
                with cancel_scope(SinkToken(sink)):
                    partial = self._one(kind, params, index, start, stop, sink)
            except Cancelled:
                sink.check()  # raises the job's own reason (cancelled, interrupted)
                raise
            sink.shard_done(index, start, stop, partial, self.worker)

    def _one(self, kind: JobKind, params: BaseModel, index: int, start: int, stop: int, sink: ShardSink) -> dict:
        if not kind.sharded:
            return kind.runner(params, self.service, sink.whole_progress)

        def progress(done: int, _total: int) -> None:
            sink.progress(index, done)

        return kind.run_shard(params, self.service.models, start, stop, progress)

    def close(self) -> None:
        pass


class MemorySink:
    """A sink without a database (the CLI): partials kept in memory, progress to a callback."""

    def __init__(self, total: int, on_progress=None):
        self.total, self.on_progress = total, on_progress
        self.partials: dict[int, dict] = {}
        self.in_shard: dict[int, int] = {}
        self.saved = 0

    def check(self) -> None:
        pass

    def _report(self) -> None:
        if self.on_progress:
            self.on_progress(self.saved + sum(self.in_shard.values()), self.total)

    def progress(self, index: int, done: int) -> None:
        self.in_shard[index] = done
        self._report()

    def whole_progress(self, done: int, total: int) -> None:
        if self.on_progress:
            self.on_progress(done, total)

    def shard_done(self, index: int, start: int, stop: int, partial: dict, worker: str) -> None:
        self.in_shard.pop(index, None)
        self.partials[index] = json.loads(json.dumps(partial, allow_nan=True))  # as a database gives it back
        self.saved += stop - start
        self._report()


def run_kind(kind: JobKind, params: BaseModel, executor: Any, on_progress=None) -> dict:
    """A job's result computed on ``executor`` without the API or a database: the same shards and
    the same merge as a job, so the result equals the API job's with the same params."""
    bounds = kind.shards(params)
    sink = MemorySink(bounds[-1][1] if kind.sharded and bounds else 0, on_progress)
    executor.run(kind, params, [(i, a, b) for i, (a, b) in enumerate(bounds)], sink)
    partials = [sink.partials[i] for i in sorted(sink.partials)]
    return kind.merge(params, partials) if kind.sharded else partials[0]
