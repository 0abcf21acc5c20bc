"""The fixed-point route on a weight-sharing (HA) zoo model: no demonstration, the real shared block."""

import pytest

from models.zoo.manifest import read_manifest

pytestmark = pytest.mark.skipif(read_manifest("text-ha") is None, reason="zoo not trained")


def test_fixed_point_of_text_ha(client):
    rid = client.post("/api/v1/runs", json={"model": "text-ha", "text": "an utterly charming and funny film"}).json()["id"]
    body = client.get(f"/api/v1/runs/{rid}/fixed-point", params={"steps": 15}).json()
    assert body["demonstration"] is False, body
    assert len(body["w1_steps"]) == 15 and body["trained_depth"] >= 2
    particles = client.get(f"/api/v1/runs/{rid}/particles").json()
    assert len(particles["coords"]) == body["trained_depth"] + 1
