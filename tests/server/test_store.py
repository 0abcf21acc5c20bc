"""The run store bounded in bytes (cachetools LRU), evictions explained, runs kept in the database (SQLite
and PostgreSQL), and the optional API token."""

import os

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.capture import Capture
from attnscope.models.outputs import NextToken
from attnscope.server.config import Settings
from attnscope.server.main import create_app
from attnscope.server.store import (
    DEFAULT_MEMORY_SHARE,
    Run,
    RunStore,
    default_max_bytes,
    object_nbytes,
    run_key,
    run_nbytes,
)


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


def _sized_run(i: str, n: int = 16, hidden: int = 0) -> Run:
    """A run whose maps are a real ``[1, 1, n, n]`` uniform stack (``4 n^2`` bytes)."""
    maps = AttentionMaps(weights=np.full((1, 1, n, n), 1.0 / n, np.float32), tokens=[f"t{j}" for j in range(n)])
    hs = np.zeros((2, n, hidden), np.float32) if hidden else None
    return Run(id=i, model="m", text=i, capture=Capture(maps=maps, output={}, hidden_states=hs))


def test_run_bytes_count_maps_hidden_states_and_output():
    run = _sized_run("a", n=32, hidden=8)
    base = run_nbytes(run)
    assert base >= 4 * 32 * 32 + 4 * 2 * 32 * 8  # the maps and the hidden states at least
    assert base < 4 * 32 * 32 + 4 * 2 * 32 * 8 + 8000  # plus token labels, text and an empty output
    top_k = [[{"token": "x" * 100, "prob": 0.5}] for _ in range(100)]
    run.capture.output = NextToken("x", 0, "x", top_k)  # a typed output: its fields are walked
    assert run_nbytes(run) - base >= 100 * 100  # the output's Python objects count too


def test_eviction_is_by_bytes_least_recently_used_first():
    size = run_nbytes(_sized_run("a"))
    store = RunStore(max_runs=100, max_bytes=int(2.5 * size))
    for i in "abc":
        store.put(_sized_run(i))
        if i == "b":
            assert store.get("a") is not None  # a is now the most recent
    assert store.get("b") is None and store.get("a") is not None and store.get("c") is not None
    assert store.nbytes == 2 * size <= store.max_bytes
    assert store.evicted("b") == size and store.evicted("a") is None
    store.put(_sized_run("b"))  # made again: no longer counted as evicted
    assert store.evicted("b") is None and store.evicted("a") == size


def test_a_run_larger_than_the_cap_is_served_but_not_kept():
    store = RunStore(max_runs=10, max_bytes=1000)
    big = _sized_run("big", n=64)  # 16 kB of maps
    assert store.put(big) is big
    assert store.get("big") is None and len(store) == 0 and store.evicted("big") == run_nbytes(big)


def test_the_default_cap_is_a_share_of_physical_memory():
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert default_max_bytes() == int(total * DEFAULT_MEMORY_SHARE)
    assert RunStore().max_bytes == default_max_bytes()
    with pytest.raises(ValueError, match="ATTNSCOPE_MAX_RUN_BYTES"):
        RunStore(max_bytes=0)


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


def test_health_reports_bytes_and_an_evicted_run_answers_404_until_posted_again(tmp_path):
    from attnscope.server.db.models import RunRecord

    cap = 3 * 2**20  # one MiniLM run of a short text holds about 1 MB (float32 queries/keys and hidden states)
    settings = Settings(preload=[], max_run_bytes=cap, database_url=f"sqlite:///{tmp_path}/runs.db")
    with TestClient(create_app(settings)) as c:
        first = c.post("/api/v1/runs", json={"text": "first text " * 20}).json()
        health = c.get("/api/v1/health").json()
        assert health["runs_max_bytes"] == cap and 0 < health["runs_bytes"] <= cap
        for i in range(6):
            c.post("/api/v1/runs", json={"text": f"another text number {i} " * 20})
        health = c.get("/api/v1/health").json()
        assert health["runs_stored"] < 7 and health["runs_bytes"] <= cap
        store = c.app.state.service.store
        assert store.get(first["id"]) is None and store.evicted(first["id"]) > 0
        with c.app.state.service.records.db.session() as s, s.begin():  # the database lost its input too
            s.delete(s.get(RunRecord, first["id"]))
        r = c.get(f"/api/v1/runs/{first['id']}/attention", params={"layer": 0, "head": 0})
        detail = r.json()["detail"]
        assert r.status_code == 404 and "evicted" in detail and "ATTNSCOPE_MAX_RUN_BYTES" in detail
        assert "POST /api/v1/runs" in detail and "same text" in detail
        again = c.post("/api/v1/runs", json={"text": "first text " * 20})
        assert again.status_code == 201 and again.json()["id"] == first["id"]
        assert c.get(f"/api/v1/runs/{first['id']}").status_code == 200


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


def test_a_lazy_causal_run_counts_its_queries_and_keys_and_no_hidden_states(tiny_causal_lms, monkeypatch):
    """What /health reports is what the run holds: queries/keys, output and token ids; its hidden
    states are not kept, and the measure view recomputes them (equal to the model's own)."""
    import torch

    from attnscope.analysis.measure import w1_successive

    root, _ = tiny_causal_lms
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    text = "The cat sat on the mat and then it slept on the mat."
    with TestClient(create_app(Settings(preload=[]))) as c:
        made = c.post("/api/v1/runs", json={"model": "local:llama", "text": text})
        assert made.status_code == 201, made.text
        run = c.app.state.service.store.get(made.json()["id"])
        cap = run.capture
        assert cap.maps.is_lazy and cap.hidden_states is None
        held = run_nbytes(run)
        # counted when stored; a string's getsizeof grows by its cached UTF-8 copy once it was served
        assert held * 0.99 <= c.get("/api/v1/health").json()["runs_bytes"] <= held
        others = object_nbytes(cap.output) + object_nbytes(cap.token_ids) + object_nbytes(cap.maps.tokens)
        assert cap.maps.nbytes < held <= cap.maps.nbytes + others + len(text)
        hidden = cap.hidden()
        assert held < cap.maps.nbytes + others + len(text) + hidden.nbytes  # they would have counted
        lm = c.app.state.service.models.get("local:llama")
        with torch.inference_mode():
            out = lm.model(input_ids=torch.tensor([list(cap.token_ids)]), output_hidden_states=True, use_cache=False)
        own = torch.stack(out.hidden_states, dim=1)[0].numpy()
        np.testing.assert_allclose(hidden, own, rtol=0, atol=1e-6)
        body = c.get(f"/api/v1/runs/{run.id}/measure")
        assert body.status_code == 200, body.text
        np.testing.assert_allclose(body.json()["w1_successive"], w1_successive(own), rtol=1e-6)
