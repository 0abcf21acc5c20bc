"""Why a head attends, over HTTP on a real API server: for tiny random causal LMs of every family with a
``Sites`` entry (Llama and Qwen2 with RoPE and grouped-query heads, Mistral with a sliding window, GPT-2
with LayerNorm and fused projections, Gemma 2 with (1 + weight) and sandwich norms and a logit soft-cap, Phi
with partial rotary and a parallel MLP) and MiniLM (post-norm encoder), the terms of ``GET /runs/{id}/qk``
sum to its score and its weight equals the served attention row; composition scores; and every bad
request a 422 naming the range or the missing part."""

from __future__ import annotations

import math

import httpx
import pytest

from attnscope.server.config import Settings

API = "/api/v1"
PROMPT = "The capital of France is Paris, and the cat sat on the mat."


@pytest.fixture(scope="module")
def api(tiny_causal_lms, start_api):
    root, _ = tiny_causal_lms
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
        with start_api(Settings(preload=[], max_runs=64)) as url, httpx.Client(base_url=url + API, timeout=300) as c:
            yield c


def _run(api, model, text=PROMPT):
    r = api.post("/runs", json={"model": model, "text": text})
    assert r.status_code == 201, r.text
    return r.json()


def _qk(api, run, **params):
    return api.get(f"/runs/{run['id']}/qk", params=params)


@pytest.mark.parametrize(
    "model", ["local:llama", "local:qwen2", "local:mistral", "local:gpt2", "local:gemma2", "local:phi", "minilm"]
)
def test_terms_sum_to_the_score_and_the_weight_is_the_served_one(api, model):
    run = _run(api, model)
    n = len(run["tokens"])
    causal = model != "minilm"
    query, key = n - 1, (n - 3 if causal else n - 1)  # within Mistral's window of 4
    rows = api.get(f"/runs/{run['id']}/rows/{query}").json()["weights"]
    for layer in (0, 1):
        body = _qk(api, run, layer=layer, head=3, query=query, key=key, parts=8).json()
        att, view = body["attribution"], body["view"]
        total = sum(sum(row) for row in att["matrix"])
        assert abs(total - view["score"]) <= 1e-4 * max(1.0, abs(view["score"]))
        assert abs(sum(att["key_totals"].values()) - view["score"]) <= 1e-4 * max(1.0, abs(view["score"]))
        assert att["conservation_error"] < 1e-4 and att["residual_error"] < 1e-3
        assert view["weight"] == pytest.approx(rows[layer][3][key], abs=1e-4)
        assert len(att["query_parts"]) <= 9 and len(view["product"]) == len(view["query"])
        assert body["kv_head"] == (1 if model in ("local:llama", "local:qwen2", "local:mistral", "local:gemma2") else 3)
        assert any(abs(v) > 1e-3 for v in view["query"]) and any(abs(v) > 1e-3 for v in view["key"])
        cap = view["softcap"]
        assert cap == (2.0 if model == "local:gemma2" else None)
        expected = view["score"] if cap is None else cap * math.tanh(view["score"] / cap)
        assert view["logit"] == pytest.approx(expected, abs=1e-6)
        if layer == 1:
            assert "L0H2" in att["key_totals"] and "MLP0" in att["key_totals"] and "emb" in att["key_totals"]


def test_bad_pairs_heads_and_families_are_422_naming_what_to_change(api):
    run = _run(api, "local:llama")
    n = len(run["tokens"])
    cases = [
        (dict(layer=0, head=0, query=1, key=2), "after query"),
        (dict(layer=0, head=0, query=n, key=0), f"0..{n - 1}"),
        (dict(layer=2, head=0, query=1, key=0), "0..1"),
        (dict(layer=0, head=4, query=1, key=0), "0..3"),
    ]
    for params, words in cases:
        r = _qk(api, run, **params)
        assert r.status_code == 422 and words in r.json()["detail"], r.text
    mistral = _run(api, "local:mistral")
    r = _qk(api, mistral, layer=0, head=0, query=len(mistral["tokens"]) - 1, key=0)
    assert r.status_code == 422 and "sliding window" in r.json()["detail"], r.text
    assert _qk(api, run, layer=0, head=0, query=1, key=0, parts=0).status_code == 422
    assert api.get("/runs/no-such-run/qk", params=dict(layer=0, head=0, query=0, key=0)).status_code == 404


def test_composition_scores_of_a_model(api):
    body = api.get("/models/local:llama/composition", params={"mode": "k"}).json()
    assert body["n_layers"] == 2 and body["n_heads"] == 4
    s = body["scores"]
    assert all(s[1][h][1][g] == 0 for h in range(4) for g in range(4))
    assert max(s[0][h][1][g] for h in range(4) for g in range(4)) == pytest.approx(body["layer_max"][0][1])
    assert 0 < body["baseline_mean"] < 1 and body["baseline_std"] > 0
    assert api.get("/models/local:llama/composition", params={"mode": "x"}).status_code == 422


def test_composition_of_a_post_norm_model_reads_through_its_norms(api):
    body = api.get("/models/minilm/composition", params={"mode": "k"}).json()
    assert body["n_layers"] == 6 and body["n_heads"] == 12
    assert body["layer_max"][0][5] > body["baseline_mean"] + 5 * body["baseline_std"]
    assert all(body["scores"][5][h][g][k] == 0 for h in range(12) for g in range(6) for k in range(12))


def test_a_family_without_sites_is_a_422_from_the_global_handler(api):
    """``SitesUnavailableError`` reaches ``server/errors.py`` (the route catches nothing): 422, code
    ``invalid``, the detail naming the family's missing parts."""
    r = api.get("/models/san-pairwise/composition", params={"mode": "k"})
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "invalid" and "zoo-san" in body["detail"], body
