"""The job status line (Census, Faithfulness): an N beyond the data set's size is said, with both
numbers; a job that covers its N, a job not yet started and a probe (which counts steps) say nothing."""

from attnscope.frontend.job_status import n_shortfall, status_line
from attnscope.server.schemas import JobPublic


def _job(kind="census", n=1000, total=872, status="running", **params) -> JobPublic:
    return JobPublic(
        id="3f2a", kind=kind, params={"dataset": "sst2", "n": n, **params}, status=status, progress=0.1,
        done=25, total=total, shards_done=1, shards_total=35, worker="thread", message="", error=None,
        created=1.0, started=2.0, finished=None, result_formats=[],
    )  # fmt: skip


def test_n_beyond_the_data_set_is_said_with_both_numbers():
    line = status_line(_job())
    assert line.startswith("census 3f2a: running · 25/872 · ")
    assert "N = 1000 asked, but the sst2 data set has 872 examples: the job uses all 872" in line
    assert "from index 800" in n_shortfall(_job(kind="faithfulness", n=100, total=72, start=800))


def test_no_note_when_the_data_set_holds_n_or_the_total_is_not_examples():
    assert n_shortfall(_job(n=872)) == "" and n_shortfall(_job(n=20, total=20)) == ""
    assert n_shortfall(_job(total=0, status="queued")) == ""  # not started: total unknown
    assert n_shortfall(_job(kind="probe", total=1)) == ""  # a whole job: total is not examples
    assert status_line(_job(n=872)) == "census 3f2a: running · 25/872"
