"""Issue 29 part 2 (the restore): a run no longer in memory is recomputed on the heavy executor, so
reads of such runs beyond its workers and queue get 429 instead of all computing at once."""

from __future__ import annotations

import socket
import threading
import time

import httpx
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


def _wait_for(condition, seconds: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_restore_waiting_for_a_worker_is_dropped_when_its_client_leaves(tmp_path):
    """A read of a run no longer in memory waits for a busy worker; its client disconnects: the waiting
    restore is cancelled then (not at the 10-minute deadline), so it never runs once the worker is free."""
    from tests.conftest import _ThreadedUvicorn, free_port

    settings = Settings(
        preload=[], max_runs=1, heavy_workers=1, heavy_queue=4, request_deadline=600, state_dir=str(tmp_path)
    )
    app, port = create_app(settings), free_port()
    with _ThreadedUvicorn(app, port), httpx.Client(base_url=f"http://127.0.0.1:{port}{API}", timeout=120) as c:
        a = c.post("/runs", json={"model": "minilm", "text": "The cat sat on the mat."}).json()["id"]
        c.post("/runs", json={"model": "minilm", "text": "A dog slept by the door."}).raise_for_status()
        store, executor = app.state.service.store, app.state.executor
        assert store.get(a) is None  # one run kept: a left memory
        gate = threading.Event()
        executor.submit(gate.wait)  # the one worker is busy
        try:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(f"GET {API}/runs/{a}/attention?layer=0&head=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            _wait_for(lambda: executor.in_flight == 2, what="the restore to be queued behind the busy worker")
            sock.close()  # the client leaves
            _wait_for(
                lambda: any(t.cancelled for t in list(executor._tokens)), what="the waiting restore to be cancelled"
            )
        finally:
            gate.set()
        _wait_for(lambda: executor.in_flight == 0, what="the executor to drain")
        assert store.get(a) is None  # the restore never ran
        assert c.get(f"/runs/{a}/attention", params={"layer": 0, "head": 0}).status_code == 200  # a reader that stays


def test_a_model_the_registry_refuses_is_answered_without_waiting_for_a_worker(tmp_path):
    """An unknown model or a path out of the model roots is a 4xx at once, not a 429 (or a minute's wait)
    behind a busy executor: it is checked before the run takes a heavy slot."""
    settings = Settings(preload=[], heavy_workers=1, heavy_queue=0, state_dir=str(tmp_path))
    with TestClient(create_app(settings)) as c:
        gate = threading.Event()
        c.app.state.executor.submit(gate.wait)  # the one worker busy, no queue: any heavy work would be a 429
        try:
            unknown = c.post(f"{API}/runs", json={"model": "no-such-model", "text": "hi"})
            assert unknown.status_code == 404 and "no-such-model" in unknown.json()["detail"], unknown.text
            outside = c.post(f"{API}/runs", json={"model": "../../etc", "text": "hi"})
            assert 400 <= outside.status_code < 500 and outside.status_code != 429, outside.text
            known = c.post(f"{API}/runs", json={"model": "minilm", "text": "hi"})
            assert known.status_code == 429  # a known model does take a slot
        finally:
            gate.set()
