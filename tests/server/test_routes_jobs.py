"""Job machinery through the HTTP client: submit, poll, result as JSON/CSV, failures, cancel."""

import threading
from typing import Literal

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from attnscope.server.jobs.kinds import JOB_KINDS, register_job_kind, rows_to_csv
from attnscope.server.schemas import JOB_RESULTS
from attnscope.server.schemas.job_results import Strict

API = "/api/v1"


class SquaresParams(BaseModel):
    n: int = Field(..., ge=1, le=1000)
    fail_at: int | None = None
    wait: bool = False


RELEASE = threading.Event()


def squares(params: SquaresParams, service, progress):
    """A real (tiny) job: squares of 0..n-1, reporting progress after each."""
    rows = []
    for i in range(params.n):
        if params.wait:
            RELEASE.wait(5)
        if params.fail_at == i:
            raise ValueError(f"planted failure at {i}")
        rows.append({"i": i, "square": i * i})
        progress(i + 1, params.n)
    return {"total": sum(r["square"] for r in rows), "rows": rows}


@pytest.fixture(autouse=True)
def _kind():
    register_job_kind("squares-test", SquaresParams, squares, "test kind")
    yield
    JOB_KINDS.pop("squares-test", None)


def test_job_runs_and_serves_json_and_csv(client, wait_job):
    r = client.post(f"{API}/jobs", json={"kind": "squares-test", "params": {"n": 5}})
    assert r.status_code == 202
    job = wait_job(client, r.json()["id"])
    assert job["status"] == "done" and job["progress"] == 1.0 and job["done"] == job["total"] == 5
    assert job["result_formats"] == ["json", "csv"]
    assert client.get(f"{API}/jobs/{job['id']}/result").json()["total"] == 30
    csv = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    assert csv.text.splitlines() == ["i,square", "0,0", "1,1", "2,4", "3,9", "4,16"]
    assert "attachment" in csv.headers["content-disposition"]
    assert any(j["id"] == job["id"] for j in client.get(f"{API}/jobs").json())


def test_failed_job_reports_its_error_and_the_server_keeps_serving(client, wait_job):
    job_id = client.post(f"{API}/jobs", json={"kind": "squares-test", "params": {"n": 5, "fail_at": 2}}).json()["id"]
    job = wait_job(client, job_id)
    assert job["status"] == "failed" and "planted failure at 2" in job["error"] and job["done"] == 2
    r = client.get(f"{API}/jobs/{job_id}/result")
    assert r.status_code == 409 and "failed" in r.json()["detail"]
    assert client.get(f"{API}/health").status_code == 200


def test_running_job_can_be_polled_and_cancelled(client, wait_job):
    RELEASE.clear()
    job_id = client.post(f"{API}/jobs", json={"kind": "squares-test", "params": {"n": 50, "wait": True}}).json()["id"]
    assert client.get(f"{API}/jobs/{job_id}/result").status_code == 409
    assert client.post(f"{API}/jobs/{job_id}/cancel").status_code == 200
    RELEASE.set()
    assert wait_job(client, job_id)["status"] == "cancelled"


@pytest.mark.parametrize(
    "body, message",
    [
        ({"kind": "nope", "params": {}}, "unknown job kind 'nope'; known kinds:"),
        ({"kind": "squares-test", "params": {"n": 0}}, "params.n"),
        ({"kind": "squares-test", "params": {}}, "params.n"),
        ({"params": {}}, "kind"),
    ],
)
def test_bad_job_requests_are_422(client, body, message):
    r = client.post(f"{API}/jobs", json=body)
    assert r.status_code == 422 and message in r.json()["detail"]


def test_unknown_job_is_404(client):
    assert client.get(f"{API}/jobs/zzz").status_code == 404
    assert client.get(f"{API}/jobs/zzz/result").status_code == 404


def test_kinds_are_listed_with_their_schema(client):
    kinds = {k["name"]: k for k in client.get(f"{API}/jobs/kinds").json()}
    assert "n" in kinds["squares-test"]["params_schema"]["properties"]


def test_rows_to_csv_unions_columns():
    assert rows_to_csv([{"a": 1}, {"a": 2, "b": 3}]).splitlines() == ["a,b", "1,", "2,3"]


class SquaresRow(Strict):
    i: int
    square: int


class SquaresResultPublic(Strict):
    kind: Literal["squares-test"] = "squares-test"
    total: int
    rows: list[SquaresRow]


def test_the_route_checks_a_result_with_its_kinds_model_from_the_registry(client, wait_job, monkeypatch):
    """A kind adds its result model to ``JOB_RESULTS``: the route validates the stored result with it
    and answers it as stored (plus ``kind``); a result the model does not describe is a 500."""
    monkeypatch.setitem(JOB_RESULTS, "squares-test", SquaresResultPublic)
    job = wait_job(client, client.post(f"{API}/jobs", json={"kind": "squares-test", "params": {"n": 3}}).json()["id"])
    body = client.get(f"{API}/jobs/{job['id']}/result").json()
    assert body == {"kind": "squares-test", "total": 5, "rows": [{"i": i, "square": i * i} for i in range(3)]}
    assert SquaresResultPublic.model_validate(body).rows[2].square == 4

    class Narrow(Strict):  # names no "rows": the stored result has a field it does not describe
        kind: Literal["squares-test"] = "squares-test"
        total: int

    monkeypatch.setitem(JOB_RESULTS, "squares-test", Narrow)
    r = TestClient(client.app, raise_server_exceptions=False).get(f"{API}/jobs/{job['id']}/result")
    assert r.status_code == 500


def test_openapi_documents_one_result_model_per_kind(client):
    spec = client.get("/openapi.json").json()
    ok = spec["paths"][f"{API}/jobs/{{job_id}}/result"]["get"]["responses"]["200"]["content"]
    schema = ok["application/json"]["schema"]
    assert schema["discriminator"]["propertyName"] == "kind"
    assert set(schema["discriminator"]["mapping"]) == set(JOB_RESULTS) and "text/csv" in ok
    props = spec["components"]["schemas"]["CensusResultPublic"]["properties"]
    assert props["rows"]["items"]["$ref"].endswith("/CensusRow")


def test_a_job_whose_data_set_is_missing_fails_with_the_command_that_fetches_it(
    client, wait_job, monkeypatch, tmp_path
):
    # the census job's example count needs the data set before any shard runs: a missing folder made the
    # job stay "queued" forever (found by the container check, whose image has no data folder)
    monkeypatch.setenv("ATTNSCOPE_DATA_DIR", str(tmp_path))
    r = client.post("/api/v1/jobs", json={"kind": "census", "params": {"model": "minilm", "n": 4}})
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["id"], timeout=60)
    assert job["status"] == "failed", job
    assert "DataSetMissingError" in job["error"] and "ATTNSCOPE_DATA_DIR" in job["error"], job["error"]
    assert "`attnscope data fetch sst2`" in job["error"], job["error"]
    assert client.get("/api/v1/health").status_code == 200


def test_the_census_sample_is_read_again_when_the_data_folder_changes(monkeypatch, tmp_path):
    # the seeded sample is cached; the cache was keyed by (data set, n, split, seed) alone, so once any
    # census had read sst2, a job on a folder without it reused the old sample and finished "done"
    from attnscope.models.data_registry import DataSetMissingError
    from attnscope.server.jobs.dataset_kinds import census_size
    from attnscope.server.schemas.jobs import CensusParams

    params = CensusParams(model="minilm", n=4)
    assert census_size(params) == 4
    monkeypatch.setenv("ATTNSCOPE_DATA_DIR", str(tmp_path))
    with pytest.raises(DataSetMissingError):
        census_size(params)
