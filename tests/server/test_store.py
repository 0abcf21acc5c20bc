"""The bounded LRU store, runs kept in the database (SQLite and PostgreSQL), and the optional API token."""

import pytest
from fastapi.testclient import TestClient

from attnscope.models.capture import Capture
from attnscope.server.config import Settings
from attnscope.server.main import create_app
from attnscope.server.store import Run, RunStore, run_key


def _run(i: str) -> Run:
    return Run(id=i, model="m", text=i, capture=Capture(maps=None, output={}))  # type: ignore[arg-type]


def test_lru_evicts_least_recently_used():
    store = RunStore(max_runs=2)
    store.put(_run("a"))
    store.put(_run("b"))
    assert store.get("a") is not None  # a is now the most recent
    store.put(_run("c"))
    assert store.get("b") is None and store.get("a") is not None and store.get("c") is not None
    assert len(store) == 2


def test_run_key_is_a_content_hash():
    assert run_key("minilm", "x") == run_key("minilm", "x")
    assert run_key("minilm", "x") != run_key("minilm", "y") != run_key("other", "x")


def test_store_needs_room():
    with pytest.raises(ValueError):
        RunStore(0)


def test_evicted_run_is_recomputed_from_the_database_and_an_unknown_one_answers_404(database):
    with TestClient(create_app(Settings(preload=[], max_runs=1, **database))) as c:
        made = c.post("/api/v1/runs", json={"text": "first text"}).json()
        c.post("/api/v1/runs", json={"text": "second text"})  # evicts the first from memory
        again = c.get(f"/api/v1/runs/{made['id']}")
        assert again.status_code == 200 and again.json()["tokens"] == made["tokens"]
        assert again.json()["prediction"] == made["prediction"]
        r = c.get("/api/v1/runs/0123456789abcdef01234567")
        assert r.status_code == 404 and "POST /api/v1/runs" in r.json()["detail"]


def test_a_run_survives_a_restart_of_the_api(database):
    with TestClient(create_app(Settings(preload=[], **database))) as c:
        made = c.post("/api/v1/runs", json={"text": "kept across restarts"}).json()
    with TestClient(create_app(Settings(preload=[], **database))) as c:  # a new process: memory is empty
        again = c.get(f"/api/v1/runs/{made['id']}")
        assert again.status_code == 200 and again.json()["tokens"] == made["tokens"]
        layer = c.get(f"/api/v1/runs/{made['id']}/attention", params={"layer": 0})
        assert layer.status_code == 200


def test_api_token_guards_everything_but_health():
    with TestClient(create_app(Settings(preload=[], api_token="s3cret"))) as c:
        assert c.get("/api/v1/health").status_code == 200
        r = c.get("/api/v1/models")
        assert r.status_code == 401 and "Bearer" in r.json()["detail"]
        assert c.get("/api/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/api/v1/models", headers={"Authorization": "Bearer s3cret"}).status_code == 200
