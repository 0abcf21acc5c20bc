"""Measure routes through the HTTP client: answers, and every bad input gets a clear 4xx."""

import inspect

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnscope.analysis.wasserstein import w1_uniform
from attnscope.server.config import Settings
from attnscope.server.main import create_app
from attnscope.server.routes import measure as measure_routes
from attnscope.server.store import Run

API = "/api/v1"
LONG = "word " * 600


@pytest.fixture(scope="module")
def other(client):
    r = client.post(f"{API}/runs", json={"text": "A dog slept under the old wooden table all afternoon."})
    assert r.status_code == 201
    return r.json()


def test_measure_profile_and_max_entropy(client, run):
    body = client.get(f"{API}/runs/{run['id']}/measure").json()
    w1 = np.array(body["w1_successive"])
    assert w1.shape == (6,) and (w1 > 0).all()
    dev = body["max_entropy_deviation"]
    assert len(dev) == 6 and max(dev) < 1e-5 and "mirror descent" in body["max_entropy_note"]
    assert body["w1_between"] is None


def test_measure_compares_two_inputs(client, run, other):
    body = client.get(f"{API}/runs/{run['id']}/measure", params={"compare": other["id"]}).json()
    between = np.array(body["w1_between"])
    assert between.shape == (7,) and (between > 0).all() and body["compare_run_id"] == other["id"]
    same = client.get(f"{API}/runs/{run['id']}/measure", params={"compare": run["id"]}).json()
    np.testing.assert_allclose(same["w1_between"], 0.0, atol=1e-9)


def test_compare_with_another_models_run_is_refused(client, run):
    service = client.app.state.service
    mine = service.store.get(run["id"])
    service.store.put(Run(id="foreign", model="zoo-ha", text="x", capture=mine.capture))
    r = client.get(f"{API}/runs/{run['id']}/measure", params={"compare": "foreign"})
    assert r.status_code == 422 and "same model" in r.json()["detail"]


def test_particles_share_one_centred_pca(client, run):
    body = client.get(f"{API}/runs/{run['id']}/particles").json()
    coords = np.array(body["coords"])
    assert coords.shape == (7, len(run["tokens"]), 2) and body["tokens"] == run["tokens"]
    np.testing.assert_allclose(coords.reshape(-1, 2).mean(0), 0.0, atol=1e-4)
    assert body["depth_labels"][0] == "embeddings" and len(body["depth_labels"]) == 7
    ev = body["explained_variance"]
    assert 0 < ev[1] <= ev[0] < 1
    three = np.array(client.get(f"{API}/runs/{run['id']}/particles", params={"dims": 3}).json()["coords"])
    np.testing.assert_allclose(np.abs(three[..., :2]), np.abs(coords), atol=1e-4)


def test_lipschitz_bound_holds_and_is_cached(client, run):
    params = {"layer": 1, "run_id": run["id"], "steps": 8, "draws": 1}
    body = client.get(f"{API}/models/minilm/lipschitz", params=params).json()
    assert body["layer"] == 1 and body["n_tokens"] == len(run["tokens"])
    assert body["estimate"] >= max(body["best_random"], body["best_ascent"]) > 0
    assert body["log10_estimate"] <= body["log10_bound"] and body["log10_ratio"] <= 0
    assert len(body["log10_bound_per_head"]) == 12 and body["bound_status"].startswith("DERIVED")
    again = client.get(f"{API}/models/minilm/lipschitz", params=params).json()
    assert again == body  # the same computation is served from the results cache
    res = client.get(f"{API}/models/minilm/lipschitz", params={**params, "residual": True}).json()
    assert res["residual"] and res["log10_bound"] >= body["log10_bound"]  # L + 1: lost in float64 at 10^200


def test_lipschitz_on_the_default_text(client):
    body = client.get(f"{API}/models/minilm/lipschitz", params={"layer": 0, "steps": 3, "draws": 1}).json()
    assert body["n_tokens"] > 5 and body["radius"] > 1


def test_fixed_point_iteration_of_a_layer(client, run):
    body = client.get(f"{API}/runs/{run['id']}/fixed-point", params={"layer": 2, "steps": 5}).json()
    assert body["demonstration"] and "demonstration" in body["block"] and body["start_depth"] == 2
    assert len(body["w1_steps"]) == 5 and body["attention_contraction"] is False
    assert body["block_bound"] is None  # the fixed-key bound is for shared (HA) blocks only
    mine = client.app.state.service.store.get(run["id"]).capture.hidden_states
    assert body["w1_steps"][0] == pytest.approx(w1_uniform(mine[2], mine[3]), rel=1e-4)


@pytest.mark.parametrize(
    "path, params, code, message",
    [
        ("/runs/nope/measure", {}, 404, "no run"),
        ("/runs/{id}/measure", {"compare": "nope"}, 404, "compare"),
        ("/runs/nope/particles", {}, 404, "no run"),
        ("/runs/{id}/particles", {"dims": 4}, 422, "dims"),
        ("/models/minilm/lipschitz", {}, 422, "layer"),
        ("/models/minilm/lipschitz", {"layer": 6}, 422, "0..5"),
        ("/models/minilm/lipschitz", {"layer": -1}, 422, "greater than or equal to 0"),
        ("/models/minilm/lipschitz", {"layer": "x"}, 422, "layer"),
        ("/models/nope/lipschitz", {"layer": 0}, 404, "known models"),
        ("/models/minilm/lipschitz", {"layer": 0, "run_id": "nope"}, 404, "no run"),
        ("/models/minilm/lipschitz", {"layer": 0, "run_id": "{id}", "text": "hi"}, 422, "not both"),
        ("/models/minilm/lipschitz", {"layer": 0, "text": "  "}, 422, "empty"),
        ("/models/minilm/lipschitz", {"layer": 0, "text": LONG}, 413, "at most 512"),
        ("/models/minilm/lipschitz", {"layer": 0, "steps": 0}, 422, "steps"),
        ("/models/minilm/lipschitz", {"layer": 0, "draws": 99}, 422, "draws"),
        ("/runs/{id}/fixed-point", {}, 422, "no shared block"),
        ("/runs/{id}/fixed-point", {"layer": 9}, 422, "0..5"),
        ("/runs/{id}/fixed-point", {"layer": 0, "steps": 0}, 422, "steps"),
        ("/runs/nope/fixed-point", {"layer": 0}, 404, "no run"),
    ],
)
def test_bad_input_gets_a_clear_4xx(client, run, path, params, code, message):
    params = {k: (v.format(id=run["id"]) if isinstance(v, str) else v) for k, v in params.items()}
    r = client.get(API + path.format(id=run["id"]), params=params)
    assert r.status_code == code, r.text
    assert message in r.json()["detail"]
    assert client.get(f"{API}/health").status_code == 200


def test_a_run_of_another_model_cannot_feed_the_lipschitz_route(client, run):
    service = client.app.state.service
    service.store.put(Run(id="foreign2", model="zoo-ha", text="x", capture=service.store.get(run["id"]).capture))
    r = client.get(f"{API}/models/minilm/lipschitz", params={"layer": 0, "run_id": "foreign2"})
    assert r.status_code == 422 and "belongs to model" in r.json()["detail"]


def test_routes_are_plain_def_and_documented(client):
    for fn in (
        measure_routes.read_measure,
        measure_routes.read_lipschitz,
        measure_routes.read_particles,
        measure_routes.read_fixed_point,
    ):
        assert not inspect.iscoroutinefunction(fn.__heavy__)  # the body runs on the heavy executor
    paths = client.get("/openapi.json").json()["paths"]
    for p in (
        "/runs/{run_id}/measure",
        "/models/{name}/lipschitz",
        "/runs/{run_id}/particles",
        "/runs/{run_id}/fixed-point",
    ):
        assert f"{API}{p}" in paths


def test_measure_routes_need_the_token_when_one_is_set():
    with TestClient(create_app(Settings(preload=[], api_token="s3cret"))) as c:
        assert c.get(f"{API}/runs/x/particles").status_code == 401
        assert c.get(f"{API}/models/minilm/lipschitz", params={"layer": 0}).status_code == 401


def test_models_without_token_clouds_get_a_422_not_a_crash(client):
    from attnscope.models.zoo.manifest import read_manifest

    if read_manifest("conv-attention") is None:
        pytest.skip("zoo not trained")
    rid = client.post(
        f"{API}/runs", json={"model": "conv-attention", "sample": {"dataset": "mnist", "index": 3}}
    ).json()["id"]
    for path in ("measure", "particles", "fixed-point"):
        r = client.get(f"{API}/runs/{rid}/{path}")
        assert r.status_code == 422 and "keeps no token clouds" in r.json()["detail"], (path, r.text)
    assert client.get(f"{API}/health").status_code == 200
