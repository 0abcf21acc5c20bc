"""The fixed-point route on a weight-sharing (HA) zoo model: no demonstration, the real shared block,
with the DERIVED fixed-key bound and the contraction condition."""

import pytest

from attnscope.models.zoo.manifest import read_manifest

pytestmark = pytest.mark.skipif(read_manifest("text-ha") is None, reason="zoo not trained")


def test_fixed_point_of_text_ha(client):
    rid = client.post("/api/v1/runs", json={"model": "text-ha", "text": "an utterly charming and funny film"}).json()[
        "id"
    ]
    body = client.get(f"/api/v1/runs/{rid}/fixed-point", params={"steps": 15}).json()
    assert body["demonstration"] is False, body
    assert len(body["w1_steps"]) == len(body["w1_normalised_steps"]) == 15 and body["trained_depth"] >= 2
    particles = client.get(f"/api/v1/runs/{rid}/particles").json()
    assert len(particles["coords"]) == body["trained_depth"] + 1


def test_shared_block_reports_its_bound_and_the_contraction_condition(client):
    rid = client.post("/api/v1/runs", json={"model": "text-ha", "text": "a slow , joyless film"}).json()["id"]
    body = client.get(f"/api/v1/runs/{rid}/fixed-point", params={"steps": 40}).json()
    assert body["behaviour"] == "drifts" and body["drift"] > 0, body["w1_steps"][-5:]
    assert body["w1_normalised_steps"][-1] < 0.1 * body["w1_normalised_steps"][0]
    b = body["block_bound"]
    assert b["contraction"] is False and "DERIVED" in b["status"] and "d_inf" in b["metric"]
    assert len(b["log10_orbit_bound"]) == len(b["orbit_step_ratio"]) == 39
    assert b["orbit_worst_slack"] <= 0 and b["estimate_worst_slack"] <= 0
    assert max(b["log10_orbit_bound"]) <= b["log10_global_bound"]
    assert all(r is None or r <= 10**l for r, l in zip(b["orbit_step_ratio"], b["log10_orbit_bound"]))
    assert b["log10_global_bound"] > 0 and b["ln1_factor"] > 1


def test_one_step_has_a_bound_but_no_observed_ratio(client):
    rid = client.post("/api/v1/runs", json={"model": "text-ha", "text": "fine"}).json()["id"]
    b = client.get(f"/api/v1/runs/{rid}/fixed-point", params={"steps": 1}).json()["block_bound"]
    assert b["log10_orbit_bound"] == [] and b["orbit_worst_slack"] is None and b["log10_global_bound"] > 0
    assert b["contraction"] is False  # no steps to judge is not a contraction
