"""Issue 29 part 2 (the restore): a run no longer in memory is recomputed on the heavy executor, so
reads of such runs beyond its workers and queue get 429 instead of all computing at once."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.main import create_app

API = "/api/v1"


def test_restoring_a_run_takes_an_executor_slot_and_answers_429_beyond():
    with TestClient(create_app(Settings(preload=[], max_runs=1, heavy_workers=1, heavy_queue=0))) as c:
        a = c.post(f"{API}/runs", json={"model": "minilm", "text": "The cat sat on the mat."}).json()["id"]
        b = c.post(f"{API}/runs", json={"model": "minilm", "text": "A dog slept by the door."}).json()["id"]
        store, executor = c.app.state.service.store, c.app.state.executor
        assert store.get(a) is None and store.get(b) is not None  # one run kept: a left memory
        gate = threading.Event()
        executor.submit(gate.wait)  # the one worker is busy
        try:
            r = c.get(f"{API}/runs/{a}/attention", params={"layer": 0, "head": 0})
            assert r.status_code == 429 and r.json()["code"] == "busy" and int(r.headers["Retry-After"]) >= 1
            assert c.get(f"{API}/runs/{b}").status_code == 200  # in memory: no model work, no slot
            assert c.get(f"{API}/runs/nope").status_code == 404  # unknown to the database: no slot either
        finally:
            gate.set()
        r = c.get(f"{API}/runs/{a}/attention", params={"layer": 0, "head": 0})
        assert r.status_code == 200, r.text  # restored on the worker once it is free
        assert c.get(f"{API}/compare/heads", params={"a": a, "b": b}).status_code == 200  # on a worker: no deadlock
