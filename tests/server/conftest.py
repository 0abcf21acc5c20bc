import time

import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.main import create_app


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(preload=[], max_runs=8))) as c:
        yield c


@pytest.fixture(scope="module")
def run(client):
    r = client.post("/api/v1/runs", json={"model": "minilm", "text": "The cat sat on the mat."})
    assert r.status_code == 201, r.text
    return r.json()


def _wait_job(client, job_id, timeout=600):
    """Poll ``GET /jobs/{id}`` until the job is done, failed or cancelled; return its JSON. The limit only
    bounds a hang: on a loaded machine (load 15 on 2 cores) the CNN probe job alone took over 120 s."""
    deadline = time.time() + timeout
    job = None
    while time.time() < deadline:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "failed", "cancelled"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish in {timeout} s: {job}")


@pytest.fixture
def wait_job():
    """``wait_job(client, job_id)``: the job's JSON once it has finished."""
    return _wait_job


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server for this session (``tests/server/postgres.py``)."""
    from tests.server.postgres import LocalPostgres, missing_reason

    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    server = LocalPostgres().start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """``Settings`` keywords of a fresh database: an SQLite file in ``tmp_path``, or a new database on
    the session's PostgreSQL server. Two apps made with the same keywords share the database."""
    if request.param == "sqlite":
        return {"state_dir": str(tmp_path)}
    return {"database_url": request.getfixturevalue("postgres_server").new_database()}
