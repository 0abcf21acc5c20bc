"""The past-jobs table of the Census and Faithfulness pages: which buttons each state gets."""

from attnscope.frontend.past_jobs import jobs_table
from attnscope.server.schemas import JobPublic


def _job(job_id: str, status: str, created: float, formats=()) -> JobPublic:
    return JobPublic(
        id=job_id,
        kind="census",
        params={},
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
        started=None,
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
    ]
    rows = jobs_table("census", jobs).children[1].children
    assert [r.children[0].children.children for r in rows] == ["now", "bad", "cut", "old"]
    assert [_buttons(r) for r in rows] == [["show"], [], ["resume"], ["show", "dl-json", "dl-csv"]]
    assert rows[1].children[2].children.title == "ValueError: bad"  # the reason as a tooltip
    assert rows[2].children[2].children.children == "interrupted"
    resume = rows[2].children[-1].children[0]
    assert resume.id == {"type": "census-past-resume", "job": "cut", "kind": "census"}
    assert resume.to_plotly_json()["props"]["aria-label"] == "resume job cut"


def test_no_jobs_says_so():
    assert jobs_table("faith", []).children == "No jobs yet."
