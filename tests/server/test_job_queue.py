"""The job queue on its database (SQLite and PostgreSQL): sharded jobs, checkpoints, admission (429), cancel,
resume, bad ids."""

import time

import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.jobs.kinds import JOB_KINDS
from attnscope.server.jobs.records import JobRecords
from attnscope.server.main import create_app
from tests.server import sharded_kind

API = "/api/v1"


@pytest.fixture(autouse=True)
def _kind():
    sharded_kind.register()
    yield
    JOB_KINDS.pop("sumsq-test", None)


def wait_for(client, job_id, *states, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = client.get(f"{API}/jobs/{job_id}").json()
        if job["status"] in states:
            return job
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} never reached {states}: {job}")


def app(database: dict, **kw):
    return TestClient(create_app(Settings(preload=[], **database, **kw)))


def test_sharded_job_checkpoints_every_shard_and_merges_in_order(database, tmp_path):
    with app(database) as c:
        job_id = c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": {"n": 35}}).json()["id"]
        job = wait_for(c, job_id, "done")
        assert job["done"] == job["total"] == 35 and job["shards_done"] == job["shards_total"] == 4
        assert job["worker"].startswith("in-process@")
        result = c.get(f"{API}/jobs/{job_id}/result").json()
        assert result["examples"] == list(range(35)) and result["sum"] == sum(i * i for i in range(35))
        records = JobRecords(c.app.state.db)
        assert [(s.start, s.stop) for s in records.shards(job_id)] == [(0, 10), (10, 20), (20, 30), (30, 35)]


def test_jobs_and_results_survive_a_restart(database, tmp_path):
    with app(database) as c:
        job_id = c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": {"n": 12}}).json()["id"]
        wait_for(c, job_id, "done")
    with app(database) as c:
        assert [j["id"] for j in c.get(f"{API}/jobs").json()] == [job_id]
        assert c.get(f"{API}/jobs/{job_id}/result").json()["n"] == 12
        assert c.get(f"{API}/jobs/{job_id}/result", params={"format": "csv"}).text.splitlines() == ["n", "1"]


def test_shutdown_mid_job_interrupts_it_and_resume_counts_every_example_once(database, tmp_path):
    gate = tmp_path / "gate"
    with app(database) as c:
        params = {"n": 40, "gate": str(gate), "gate_shard": 2}
        job_id = c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": params}).json()["id"]
        deadline = time.time() + 20
        while c.get(f"{API}/jobs/{job_id}").json()["shards_done"] < 2 and time.time() < deadline:
            time.sleep(0.02)
    with app(database) as c:  # the first shut down with the job waiting at its third shard
        job = c.get(f"{API}/jobs/{job_id}").json()
        assert job["status"] == "interrupted" and "resume" in job["message"], job
        assert job["shards_done"] == 2 and job["done"] == 20
        r = c.get(f"{API}/jobs/{job_id}/result")
        assert r.status_code == 409 and f"/jobs/{job_id}/resume" in r.json()["detail"]
        gate.touch()
        assert c.post(f"{API}/jobs/{job_id}/resume").status_code == 202
        job = wait_for(c, job_id, "done")
        assert job["done"] == job["total"] == 40
        result = c.get(f"{API}/jobs/{job_id}/result").json()
        assert result["examples"] == list(range(40))  # none lost, none counted twice
        r = c.post(f"{API}/jobs/{job_id}/resume")
        assert r.status_code == 409 and "only an interrupted or cancelled job can be resumed" in r.json()["detail"]


def test_a_cancelled_job_resumes_from_its_saved_shards_and_counts_every_example_once(database, tmp_path):
    gate = tmp_path / "gate"
    with app(database) as c:
        params = {"n": 40, "gate": str(gate), "gate_shard": 2}
        job_id = c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": params}).json()["id"]
        deadline = time.time() + 20
        while c.get(f"{API}/jobs/{job_id}").json()["shards_done"] < 2 and time.time() < deadline:
            time.sleep(0.02)
        assert c.post(f"{API}/jobs/{job_id}/cancel").status_code == 200  # waiting at its third shard
        job = wait_for(c, job_id, "cancelled")
        assert job["shards_done"] == 2 and job["done"] == 20
        gate.touch()
        r = c.post(f"{API}/jobs/{job_id}/resume")
        assert r.status_code == 202, r.text
        job = wait_for(c, job_id, "done")
        assert job["done"] == job["total"] == 40 and job["message"] == ""
        assert c.get(f"{API}/jobs/{job_id}/result").json()["examples"] == list(range(40))  # none twice


def test_queue_limit_answers_429_with_retry_after_and_cancel_of_a_queued_job(database, tmp_path):
    gate = tmp_path / "gate"
    with app(database, max_queued_jobs=2) as c:
        params = {"n": 20, "gate": str(gate), "gate_shard": 0}
        running = c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": params}).json()["id"]
        wait_for(c, running, "running")
        queued = [c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": {"n": 5}}) for _ in range(2)]
        assert all(r.status_code == 202 for r in queued)
        r = c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": {"n": 5}})
        assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
        body = r.json()
        assert body["code"] == "busy" and "queue is full (2 jobs queued, limit 2)" in body["detail"]
        assert r.headers["X-Queue-Length"] == "2" and r.headers["X-Queue-Limit"] == "2"
        cancelled = c.post(f"{API}/jobs/{queued[0].json()['id']}/cancel").json()
        assert cancelled["status"] == "cancelled"  # at once, without waiting for the queue
        assert c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": {"n": 5}}).status_code == 202
        assert c.post(f"{API}/jobs/{running}/cancel").status_code == 200
        assert wait_for(c, running, "cancelled")["status"] == "cancelled"
        gate.touch()
        assert wait_for(c, queued[1].json()["id"], "done")["status"] == "done"


def test_failed_shard_fails_the_job_with_its_reason(database, tmp_path):
    with app(database) as c:
        params = {"n": 30, "fail_shard": 1}
        job = wait_for(c, c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": params}).json()["id"], "failed")
        assert "planted failure in shard 1" in job["error"] and job["shards_done"] == 1


@pytest.mark.parametrize("method, path", [("get", ""), ("get", "/result"), ("post", "/cancel"), ("post", "/resume")])
def test_unknown_job_id_answers_404(database, tmp_path, method, path):
    with app(database) as c:
        r = getattr(c, method)(f"{API}/jobs/nosuchjob{path}")
        assert r.status_code == 404 and "GET /api/v1/jobs" in r.json()["detail"]


def test_list_filters_by_kind_and_status(database, tmp_path):
    with app(database) as c:
        job_id = c.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": {"n": 3}}).json()["id"]
        wait_for(c, job_id, "done")
        assert [j["id"] for j in c.get(f"{API}/jobs", params={"kind": "sumsq-test", "status": "done"}).json()] == [
            job_id
        ]
        assert c.get(f"{API}/jobs", params={"kind": "census"}).json() == []
        assert c.get(f"{API}/jobs", params={"status": "bogus"}).status_code == 422
