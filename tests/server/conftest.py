import pytest
from fastapi.testclient import TestClient

from server.config import Settings
from server.main import create_app


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(preload=[], max_runs=8))) as c:
        yield c


@pytest.fixture(scope="module")
def run(client):
    r = client.post("/api/v1/runs", json={"model": "minilm", "text": "The cat sat on the mat."})
    assert r.status_code == 201, r.text
    return r.json()
