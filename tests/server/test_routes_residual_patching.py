"""The layer x position patching sweep through a real API server over HTTP: its cells against single
residual patches of the interventions route, and each bad body a clear 4xx."""

from __future__ import annotations

import httpx
import pytest

API = "/api/v1"
TEXT = "a gorgeous, witty, seductive movie."
CORRUPT = "a boring, witty, seductive movie."


@pytest.fixture(scope="module")
def api(api_url):
    with httpx.Client(base_url=api_url + API, timeout=600) as c:
        yield c


@pytest.fixture(scope="module")
def run(api):
    r = api.post("/runs", json={"model": "minilm-sst2", "text": TEXT})
    assert r.status_code == 201, r.text
    return r.json()


def test_sweep_cells_equal_single_residual_patches(api, run):
    r = api.post(f"/runs/{run['id']}/residual-patching", json={"corrupted": CORRUPT, "metric": "logit_diff"})
    assert r.status_code == 200, r.text
    res = r.json()
    n_layers, n = run["shape"][0], len(run["tokens"])
    assert res["metric"] == "logit_diff" and res["tokens"] == run["tokens"]
    assert len(res["effect"]) == n_layers and all(len(row) == n for row in res["effect"])
    for layer, p in ((0, 2), (n_layers - 1, 0)):
        body = {"interventions": [{"kind": "patch_residual", "layer": layer, "positions": [p]}], "corrupted": CORRUPT}
        one = api.post(f"/runs/{run['id']}/interventions", json={**body, "metric": "logit_diff"}).json()
        assert res["effect"][layer][p] == pytest.approx(one["effects"]["logit_diff"], abs=1e-4)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({}, 422, "corrupted"),
        ({"corrupted": ""}, 422, "corrupted"),
        ({"corrupted": CORRUPT, "chunk": 65}, 422, "chunk"),
        ({"corrupted": "a boring movie"}, 422, "same number of tokens"),
        ({"corrupted": CORRUPT, "metric": "answer_logit_diff", "answers": ["a", "b"]}, 422, "causal LM"),
        ({"corrupted": CORRUPT, "metric": "loss"}, 422, "does not fit"),
    ],
)
def test_bad_sweeps_are_4xx_with_what_to_change(api, run, body, status, message):
    r = api.post(f"/runs/{run['id']}/residual-patching", json=body)
    assert r.status_code == status, r.text
    assert message in r.text


def test_a_sweep_of_more_cells_than_the_bound_is_413(api, run, monkeypatch):
    from attnscope.server.routes import interventions as route

    n_cells = run["shape"][0] * len(run["tokens"])  # 6 layers x 10 tokens
    monkeypatch.setattr(route, "MAX_PATCH_CELLS", n_cells - 1)  # the bound, one cell short (the server runs in-process)
    r = api.post(f"/runs/{run['id']}/residual-patching", json={"corrupted": CORRUPT})
    assert r.status_code == 413, r.text
    assert f"= {n_cells} cells; at most {n_cells - 1}" in r.text
