"""Structure routes through the HTTP client: shift, heads, evolution, rollout, flow, and bad input."""

import numpy as np
import pytest

API = "/api/v1"
TEXT = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat."


@pytest.fixture(scope="module")
def rid(client):
    return client.post(f"{API}/runs", json={"text": TEXT}).json()["id"]


def test_shift_finds_the_previous_token_head_and_its_kernel(client, rid):
    body = client.get(f"{API}/runs/{rid}/shift", params={"k": 4}).json()
    assert body["offsets"] == [-4, -3, -2, -1, 0, 1, 2, 3, 4] and body["kernel_shape"] == [9]
    assert np.asarray(body["mass"]).shape == (6, 12, 9)
    top = body["shift_heads"][0]
    assert (top["label"], top["offset"]) == ("L0H2", -1) and top["mass"] > 0.95
    assert body["best_offset"][0][2] == -1 and body["is_shift"][0][2] is True
    kernel = np.asarray(body["kernel"][0][2])
    assert kernel.argmax() == 3 and kernel.sum() <= 1 + 1e-6
    assert body["r2"][0][2] > 0.95
    # sink heads are not shift heads
    assert all(h["offset"] != 0 or h["mass"] > 0.5 for h in body["shift_heads"])


def test_heads_labels_types_and_distance(client, rid):
    body = client.get(f"{API}/runs/{rid}/heads").json()
    assert len(body["heads"]) == 72 and body["distance_unit"] == "tokens"
    by_label = {h["head"]: h for h in body["heads"]}
    assert "previous" in by_label["L0H2"]["labels"]
    assert abs(by_label["L0H2"]["distance"] - 1.0) < 0.05
    assert "duplicate" in by_label["L0H2"] and "induction" in by_label["L0H2"]
    assert body["probe"].startswith("repeated random tokens")
    sinks = [h for h in body["heads"] if "cls-sink" in h["labels"]]
    assert sinks and not any(l in ("previous", "next", "self") for h in sinks for l in h["labels"])
    assert len(body["distance_per_layer"]) == 6
    no_probe = client.get(f"{API}/runs/{rid}/heads", params={"probe": False}).json()
    assert no_probe["probe"] is None and "duplicate" not in no_probe["heads"][0]


def test_evolution_alone_and_compared(client, rid):
    body = client.get(f"{API}/runs/{rid}/evolution").json()
    prof = body["profile"]
    assert len(prof["layer_entropy"]) == 6 and len(prof["js_next"]) == 5
    assert all(0 <= v <= 1 for v in prof["layer_norm_entropy"])
    assert body["compare"] is None
    other = client.post(f"{API}/runs", json={"text": TEXT + " Again."}).json()["id"]
    cmp = client.get(f"{API}/runs/{rid}/evolution", params={"compare_to": other}).json()
    assert cmp["compare_run_id"] == other and cmp["match_layer"] == list(range(6))
    assert cmp["js_between"] is None  # different tokens: maps are not comparable cell by cell
    same = client.get(f"{API}/runs/{rid}/evolution", params={"compare_to": rid}).json()
    assert max(same["js_between"]) < 1e-6 and min(same["cosine_between"]) > 0.999


def test_rollout_and_flow_are_distributions_over_tokens(client, rid):
    n = len(client.get(f"{API}/runs/{rid}").json()["tokens"])
    for method in ("rollout", "flow"):
        body = client.get(f"{API}/runs/{rid}/{method}").json()
        v = np.asarray(body["values"])
        assert body["method"] == method and body["row"] == 0 and v.shape == (n,)
        assert abs(v.sum() - 1) < 1e-4 and (v >= 0).all()
    mean = client.get(f"{API}/runs/{rid}/rollout", params={"row": "mean"}).json()
    assert mean["row"] is None
    three = client.get(f"{API}/runs/{rid}/rollout", params={"row": "3"}).json()
    assert three["row"] == 3


def test_rollout_and_flow_through_an_intermediate_layer(client, rid):
    """Through layer 0 both are the row of Ahat^0 = 0.5 mean_h A^0 + 0.5 I (one layer: each edge is its
    own max-flow); through the last layer they are the default."""
    run = client.app.state.service.store.get(rid)
    w0 = run.capture.maps.weights[0].astype(np.float64).mean(axis=0)
    expected = 0.5 * w0[0] + 0.5 * np.eye(len(w0))[0]
    for method in ("rollout", "flow"):
        first = client.get(f"{API}/runs/{rid}/{method}", params={"layer": 0}).json()
        assert first["through_layer"] == 0
        np.testing.assert_allclose(first["values"], expected, atol=1e-4)
        last = client.get(f"{API}/runs/{rid}/{method}", params={"layer": 5}).json()
        assert last["values"] == client.get(f"{API}/runs/{rid}/{method}").json()["values"]
        assert last["through_layer"] == 5
    mid = client.get(f"{API}/runs/{rid}/rollout", params={"layer": 2}).json()["values"]
    assert not np.allclose(mid, expected, atol=1e-3)


@pytest.mark.parametrize(
    "path, params, code, message",
    [
        ("shift", {"k": 0}, 422, "k"),
        ("shift", {"threshold": 2}, 422, "threshold"),
        ("rollout", {"row": "x"}, 422, "row: String should match pattern '^(cls|mean|[0-9]{1,9})$'"),
        ("rollout", {"row": "500"}, 422, "out of range"),
        ("rollout", {"layer": 6}, 422, "layer=6 is out of range: this run has 6 layers, use 0..5"),
        ("flow", {"layer": -1}, 422, "layer: Input should be greater than or equal to 0"),
        ("evolution", {"compare_to": "nope"}, 404, "no run with id 'nope' to compare"),
    ],
)
def test_bad_parameters(client, rid, path, params, code, message):
    r = client.get(f"{API}/runs/{rid}/{path}", params=params)
    assert r.status_code == code and message in r.json()["detail"]


def test_flow_refuses_long_inputs_naming_the_cap(client):
    rid = client.post(f"{API}/runs", json={"text": "word " * 70}).json()["id"]
    r = client.get(f"{API}/runs/{rid}/flow")
    assert r.status_code == 422 and "limited to 64 tokens" in r.json()["detail"]
    assert client.get(f"{API}/runs/{rid}/rollout").status_code == 200


def test_unknown_run_is_404_on_every_analysis(client):
    for path in ("shift", "heads", "evolution", "rollout", "flow"):
        assert client.get(f"{API}/runs/missing/{path}").status_code == 404
