"""The past-jobs table of the Census and Faithfulness pages: which buttons each state gets, and what
each job ran on (model, data set, N) and when it started."""

from attnscope.frontend.past_jobs import HEAD, jobs_table
from attnscope.server.schemas import JobPublic

STATUS = HEAD.index("status")


def _job(job_id: str, status: str, created: float, formats=(), params=None, started=None) -> JobPublic:
    return JobPublic(
        id=job_id,
        kind="census",
        params=params or {},
        status=status,
        progress=0.0,
        done=3,
        total=10,
        shards_done=0,
        shards_total=1,
        worker="ray:ab12cd34@host:1",
        message="the API process stopped while this job ran" if status == "interrupted" else "",
        error="ValueError: bad" if status == "failed" else None,
        created=created,
        started=started,
        finished=None,
        result_formats=list(formats),
    )


def _buttons(row) -> list[str]:
    return [b.id["type"].rsplit("-past-", 1)[1] for b in row.children[-1].children]


def test_each_state_gets_its_buttons_newest_first():
    jobs = [
        _job("old", "done", 1.0, ["json", "csv"]),
        _job("cut", "interrupted", 2.0),
        _job("bad", "failed", 3.0),
        _job("now", "running", 4.0),
        _job("stop", "cancelled", 0.5),
    ]
    rows = jobs_table("census", jobs).children[1].children
    assert [r.children[0].children.children for r in rows] == ["now", "bad", "cut", "old", "stop"]
    assert [_buttons(r) for r in rows] == [["show"], [], ["resume"], ["show", "dl-json", "dl-csv"], ["resume"]]
    assert rows[1].children[STATUS].children.title == "ValueError: bad"  # the reason as a tooltip
    assert rows[2].children[STATUS].children.children == "interrupted"
    resume = rows[2].children[-1].children[0]
    assert resume.id == {"type": "census-past-resume", "job": "cut", "kind": "census"}
    assert resume.to_plotly_json()["props"]["aria-label"] == "resume job cut"


def test_no_jobs_says_so():
    assert jobs_table("faith", []).children == "No jobs yet."


def test_each_job_says_its_model_data_set_n_and_start():
    params = {"model": "minilm", "dataset": "sst2", "n": 40, "seed": 0}
    started = 1_764_700_000.0  # 2025-12-02 18:26:40 UTC
    rows = jobs_table("census", [_job("ran", "done", 1.0, params=params, started=started), _job("wait", "queued", 2.0)])
    cells = {h: c for h, c in zip(HEAD, rows.children[1].children[1].children, strict=False)}
    assert [cells[h].children for h in ("model", "data set", "N")] == ["minilm", "sst2", "40"]
    assert cells["started (UTC)"].children.children == "2025-12-02 18:26:40"
    queued = {h: c for h, c in zip(HEAD, rows.children[1].children[0].children, strict=False)}
    assert queued["started (UTC)"].children.children == "queued 1970-01-01 00:00:02"
    assert [queued[h].children for h in ("model", "data set", "N")] == ["", "", ""]
