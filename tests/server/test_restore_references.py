"""Issue 29 part 5: a run named in a query (``measure?compare=B``, ``evolution?compare_to=B``,
``lipschitz?run_id=B``) is restored from the database like ``GET /runs/B`` restores it, not a 404."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.main import create_app

API = "/api/v1"


@pytest.fixture(scope="module")
def two_runs():
    """``(client, a, b)``: run ``a`` was pushed out of memory by ``b`` (one run kept), the database has both."""
    with TestClient(create_app(Settings(preload=[], max_runs=1))) as c:
        a = c.post(f"{API}/runs", json={"model": "minilm", "text": "The cat sat on the mat."}).json()["id"]
        b = c.post(f"{API}/runs", json={"model": "minilm", "text": "A dog slept by the door."}).json()["id"]
        yield c, a, b


@pytest.mark.parametrize(
    "path, params",
    [
        ("/runs/{b}/measure", {"compare": "{a}"}),
        ("/runs/{b}/evolution", {"compare_to": "{a}"}),
        ("/models/minilm/lipschitz", {"layer": 0, "run_id": "{a}", "steps": 4, "draws": 1}),
    ],
    ids=["measure-compare", "evolution-compare-to", "lipschitz-run-id"],
)
def test_a_run_named_in_a_query_is_restored(two_runs, path, params):
    client, a, b = two_runs
    client.get(f"{API}/runs/{b}")  # b in memory, so a is not (one run kept)
    assert client.app.state.service.store.get(a) is None
    filled = {k: v.format(a=a) if isinstance(v, str) else v for k, v in params.items()}
    r = client.get(API + path.format(b=b), params=filled)
    assert r.status_code == 200, r.text
