"""The issue's "must show" for SmolLM2, through a real API server over HTTP: listed in GET /models,
" Paris" as the top next token of "The capital of France is", an upper triangle of exact zeros,
sink heads labelled and an induction head over 0.5 on the 2 x 30 random-token probe, generation
with each step's attention, explainers and ERASER metrics of a next token, and preloading."""

import time

import httpx
import numpy as np
import pytest

from attnscope.server.config import Settings

API = "/api/v1"


@pytest.fixture(scope="module")
def api(api_url, smollm2):  # smollm2: the conversion is done (once) before the server loads it
    with httpx.Client(base_url=api_url + API, timeout=600) as c:
        yield c


@pytest.fixture(scope="module")
def paris(api):
    r = api.post("/runs", json={"model": "smollm2", "text": "The capital of France is"})
    assert r.status_code == 201, r.text
    return r.json()


def test_models_lists_smollm2(api):
    m = next(m for m in api.get("/models").json()["models"] if m["name"] == "smollm2")
    assert (m["family"], m["task"], m["modality"], m["source"]) == ("llama", "causal-lm", "text", "package")
    assert m["context"] == 8192 and m["max_tokens"] == 4096 and m["kv_heads"] == 3


def test_paris_is_the_top_next_token_and_the_maps_are_causal(api, paris):
    pred = paris["prediction"]
    assert pred["kind"] == "next-token" and pred["predicted"] == " Paris"
    assert pred["top_k"][-1][0]["text"] == " Paris" and pred["top_k"][-1][0]["token"] == "␣Paris"
    assert paris["tokens"] == ["The", "␣capital", "␣of", "␣France", "␣is"]
    assert paris["token_ids"] == [504, 3575, 282, 4649, 314]
    assert paris["shape"] == [30, 9, 5, 5] and paris["kv_heads"] == 3
    assert paris["kv_head_of"] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for layer in range(30):
        w = np.array(api.get(f"/runs/{paris['id']}/attention", params={"layer": layer}).json()["weights"])
        assert np.all(np.triu(w, 1) == 0.0), layer


def test_sink_and_induction_heads_are_labelled(api, paris):
    heads = api.get(f"/runs/{paris['id']}/heads").json()
    assert "r1..r30 r1..r30" in heads["probe"]
    sinks = [h for h in heads["heads"] if "sink" in h["labels"]]
    assert len(sinks) >= 30 and all(h["sink"] >= 0.5 for h in sinks)
    best = max(heads["heads"], key=lambda h: h["induction"])
    assert best["induction"] > 0.5 and "induction" in best["labels"] and best["head"] == "L18H6"


def test_generate_8_tokens_with_each_steps_attention(api):
    body = {"model": "smollm2", "text": "The capital of France is", "generate": {"max_new_tokens": 8}}
    run = api.post("/runs", json=body).json()
    gen = run["generation"]
    assert gen["text"].startswith(" Paris.") and len(gen["steps"]) == 8 and run["shape"][-1] == 13
    rows = api.get(f"/runs/{run['id']}/rows/{gen['steps'][0]['query']}").json()
    assert rows["shape"] == [30, 9, 5] and rows["token"] == "␣is"
    last = api.get(f"/runs/{run['id']}/rows/{gen['steps'][-1]['query']}").json()
    assert last["shape"] == [30, 9, 12] and np.allclose(np.array(last["weights"]).sum(-1), 1, atol=1e-4)


def test_explainers_and_eraser_metrics_of_the_next_token(api, paris):
    names = ["attention", "rollout", "attn_grad", "integrated_gradients", "saliency", "occlusion", "random"]
    r = api.post(f"/runs/{paris['id']}/faithfulness", json={"explainers": names, "k": 0.4})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["target_label"] == "␣Paris" and body["position"] == 4 and body["labels"][0] == "␣Paris"
    by_name = {e["name"]: e for e in body["explainers"]}
    assert set(by_name) == set(names)
    for e in by_name.values():
        assert len(e["scores"]) == 5 and np.all(np.isfinite(e["scores"]))
        assert e["comprehensiveness"] is not None and e["sufficiency"] is not None


def test_smollm2_can_be_preloaded(start_api, smollm2):
    with start_api(Settings(preload=["smollm2"], max_runs=4)) as url:
        deadline = time.time() + 300
        while "smollm2" not in httpx.get(f"{url}{API}/health").json()["loaded_models"]:
            assert time.time() < deadline, "smollm2 was not preloaded in 300 s"
            time.sleep(0.5)
