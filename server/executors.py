"""Where a job's shards run. ``InProcessExecutor`` runs them one after another in the job's thread
(the default); ``server/ray_executor.py`` runs them as Ray tasks on actors that hold the model.

An executor's ``run(kind, params, pending, sink)`` computes every pending shard
``(index, start, stop)`` and hands each partial result to ``sink.shard_done`` (in any order: the
manager merges by index); it reports examples done inside a shard with ``sink.progress`` and stops
when ``sink.check()`` raises.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Protocol

from pydantic import BaseModel

from attnscope.server.jobs import JobKind


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
            if kind.sharded:

                def progress(done: int, _total: int, index: int = index) -> None:
                    sink.progress(index, done)

                partial = kind.run_shard(params, self.service.models, start, stop, progress)
            else:
                partial = kind.runner(params, self.service, sink.whole_progress)
            sink.shard_done(index, start, stop, partial, self.worker)

    def close(self) -> None:
        pass
