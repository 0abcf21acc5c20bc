"""A cancel reaches a running shard through the model loops' ``check_cancelled`` (one batch apart), not
only through the shard's progress reports: a shard that scores a group of examples in one call reports
no progress for minutes on a loaded machine (the faithfulness job's groups of 16)."""

from types import SimpleNamespace

import pytest
from pydantic import BaseModel

from attnscope.models.cancel import check_cancelled
from attnscope.server.jobs.kinds import JobCancelled, JobKind
from attnscope.server.jobs.manager import JobInterrupted
from attnscope.server.jobs.shards import InProcessExecutor


class Params(BaseModel):
    n: int = 4


class Sink:
    """A job's sink that says stop (``reason``) from its ``stop_at``-th check on."""

    def __init__(self, stop_at: int, reason: type[Exception]):
        self.checks, self.stop_at, self.reason, self.done = 0, stop_at, reason, []

    def check(self) -> None:
        self.checks += 1
        if self.checks >= self.stop_at:
            raise self.reason()

    def progress(self, index, done):
        self.check()

    def whole_progress(self, done, total):
        self.check()

    def shard_done(self, index, start, stop, partial, worker):
        self.done.append(index)


def silent_shard(params, models, start, stop, progress) -> dict:
    """Model batches with a cancellation check each (as ``make_predict``), no progress until the end."""
    batches = 0
    while batches < 1000:
        check_cancelled()
        batches += 1
    progress(stop - start, stop - start)
    return {"batches": batches}


KIND = JobKind("silent-test", Params, size=lambda p: p.n, run_shard=silent_shard, merge=lambda p, parts: {})


@pytest.mark.parametrize("reason", [JobCancelled, JobInterrupted])
def test_a_shard_without_progress_reports_stops_at_its_next_batch(reason):
    sink = Sink(stop_at=5, reason=reason)  # the executor's own check before the shard, then four batches
    with pytest.raises(reason):
        InProcessExecutor(service=SimpleNamespace(models=None)).run(KIND, Params(), [(0, 0, 4)], sink)
    # the fifth check (the fourth batch's) stops it, and the executor asks once more for the job's own reason
    assert sink.checks == 6 and sink.done == []  # stopped inside the shard, nothing checkpointed


def test_an_uncancelled_job_runs_every_batch():
    sink = Sink(stop_at=10**9, reason=JobCancelled)
    InProcessExecutor(service=SimpleNamespace(models=None)).run(KIND, Params(), [(0, 0, 4)], sink)
    assert sink.done == [0] and sink.checks == 1 + 1000 + 1  # one before the shard, one a batch, the progress
