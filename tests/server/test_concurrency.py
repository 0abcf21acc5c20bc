"""Issue 15 row 1: concurrent gradient explanations on the one shared model.

Before the fix, ``attn_grad`` called ``backward()`` and ``zero_grad`` on the model every request
shares (8 parallel requests crashed the process with SIGABRT/SIGSEGV), and captum's layer methods
registered forward hooks on the shared embedding layer (one request read another's activations).
Here 16 requests run at once, each on its own text, and each must equal its sequential answer.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.main import create_app

GRADIENT = ["attn_grad", "integrated_gradients", "deeplift", "saliency", "input_x_gradient"]
TEXTS = [
    f"{a} film , {b} and {c} ."
    for a, b, c in [
        ("a gripping", "funny", "moving"),
        ("a dull", "slow", "tedious"),
        ("an honest", "warm", "wise"),
        ("a messy", "loud", "empty"),
    ]
]
BODY = {"explainers": GRADIENT, "metrics": ["comprehensiveness"], "options": {"integrated_gradients": {"n_steps": 8}}}


@pytest.fixture(scope="module")
def client():
    settings = Settings(preload=[], max_runs=32, heavy_workers=16, heavy_queue=16)
    with TestClient(create_app(settings)) as c:
        yield c


def _explain(client, run_id: str) -> dict[str, list[float]]:
    r = client.post(f"/api/v1/runs/{run_id}/faithfulness", json=BODY)
    assert r.status_code == 200, r.text
    return {e["name"]: e["scores"] for e in r.json()["explainers"]}


@pytest.mark.timeout(600)
def test_16_concurrent_gradient_explanations_equal_their_sequential_results(client):
    run_ids = []
    for text in TEXTS:
        r = client.post("/api/v1/runs", json={"model": "minilm-sst2", "text": text})
        assert r.status_code == 201, r.text
        run_ids.append(r.json()["id"])
    sequential = {rid: _explain(client, rid) for rid in run_ids}
    model = client.app.state.service.models.get("minilm-sst2").classifier
    hooks_before = _hooks(model)  # transformers' own output-capturing hooks, installed once at the first forward
    jobs = [run_ids[i % len(run_ids)] for i in range(16)]
    with ThreadPoolExecutor(16) as pool:
        concurrent = list(pool.map(lambda rid: _explain(client, rid), jobs))
    for rid, got in zip(jobs, concurrent):
        for name in GRADIENT:
            np.testing.assert_allclose(got[name], sequential[rid][name], rtol=1e-5, atol=1e-7, err_msg=name)
    assert client.get("/api/v1/health").status_code == 200  # the process is alive and serving
    # the shared model carries no trace of the requests: no gradients, no hook left behind
    assert all(p.grad is None for p in model.parameters())
    assert _hooks(model) == hooks_before


def _hooks(model) -> dict[str, tuple[int, ...]]:
    return {
        name: (len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks))
        for name, m in model.named_modules()
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks
    }
