"""GET /runs/{id}/thumbnails: every head's map mean-pooled to at most 64 x 64 and each block of rows'
mean weight on the first token and the special positions, equal to pooling the maps the attention
route reads, for an eager run (MiniLM) and a lazy one (SmolLM2: computed from queries and keys);
computed once per run, with the run when POST /runs asks for it. Also GET /runs/{id}?prediction=summary."""

import numpy as np
import pytest

from attnscope.analysis.codec import MEDIA_TYPE, unpack
from attnscope.analysis.slices import pool_blocks

API = "/api/v1"
WORDS = " ".join(f"word{i} and the cat sat on the mat" for i in range(12))  # about 100 MiniLM tokens


def _expected(client, run, layer, stride, keys):
    """``(means [head, R, R], key_means [head, R, len(keys)])`` pooled from the attention route's layer."""
    full = np.array(
        client.get(f"{API}/runs/{run['id']}/attention", params={"layer": layer}).json()["weights"], np.float32
    )
    n = full.shape[-1]
    blocks = [full[:, i : i + stride][:, :, keys].mean(axis=1) for i in range(0, n, stride)]
    return pool_blocks(full, stride, "mean"), np.stack(blocks, axis=1)


def _check(client, run, layers):
    body = client.get(f"{API}/runs/{run['id']}/thumbnails").json()
    n = len(run["tokens"])
    stride = -(-n // 64)
    assert body["stride"] == stride > 1
    assert body["keys"] == sorted({0, *run["special"]})
    n_layers, n_heads = run["shape"][:2]
    assert body["shape"] == [n_layers, n_heads, -(-n // stride), -(-n // stride)]
    means, key_means = np.array(body["means"]), np.array(body["key_means"])
    for layer in layers:
        want, want_keys = _expected(client, run, layer, stride, body["keys"])
        np.testing.assert_allclose(means[layer], want, atol=1e-6)
        np.testing.assert_allclose(key_means[layer], want_keys, atol=1e-6)
    blob = client.get(f"{API}/runs/{run['id']}/thumbnails", headers={"Accept": MEDIA_TYPE}).content
    both, header = unpack(blob)
    cells = header["cells"]
    assert header["stride"] == stride and header["keys"] == body["keys"] and both.shape[-1] == cells + len(body["keys"])
    np.testing.assert_allclose(both[..., :cells], means, atol=1e-3)
    np.testing.assert_allclose(both[..., cells:], key_means, atol=1e-3)


def test_an_eager_runs_thumbnails_pool_its_maps(client):
    run = client.post(f"{API}/runs", json={"model": "minilm", "text": WORDS}).json()
    assert run["special"] == [0, len(run["tokens"]) - 1]  # [CLS] and [SEP]: both keys are read
    _check(client, run, layers=[0, 2, 5])


@pytest.mark.slow
def test_a_lazy_runs_thumbnails_pool_its_maps_and_are_computed_once_with_the_run(client, smollm2):
    service = client.app.state.service
    before = service.thumbnails.layers_computed
    text = "Attention maps show which earlier tokens each position reads. " * 12  # about 130 tokens
    run = client.post(f"{API}/runs", json={"model": "smollm2", "text": text, "thumbnails": True}).json()
    assert service.thumbnails.layers_computed == before + 30 and service.thumbnails.kept(run["id"]) == 30
    _check(client, run, layers=[0, 29])
    part = client.get(f"{API}/runs/{run['id']}/thumbnails", params={"layers": "28:30"}).json()
    assert part["layers"] == [28, 30] and part["shape"][0] == 2
    assert service.thumbnails.layers_computed == before + 30  # read from what the run's creation computed
    # GET /runs/{id}?prediction=summary (what the dashboard reads for a run record): no per-position lists
    full = client.get(f"{API}/runs/{run['id']}").json()["prediction"]
    summary = client.get(f"{API}/runs/{run['id']}", params={"prediction": "summary"}).json()["prediction"]
    assert len(full["top_k"]) == len(run["tokens"]) and summary["top_k"] is None and summary["loss"] is None
    assert summary["predicted"] == full["predicted"] and summary["mean_loss"] == full["mean_loss"]
    assert client.get(f"{API}/runs/{run['id']}", params={"prediction": "all"}).status_code == 422


def test_a_few_layers_at_a_time(client):
    run = client.post(f"{API}/runs", json={"model": "minilm", "text": WORDS + " and more"}).json()
    service = client.app.state.service
    before = service.thumbnails.layers_computed
    part = client.get(f"{API}/runs/{run['id']}/thumbnails", params={"layers": "2:4"}).json()
    assert part["layers"] == [2, 4] and part["shape"][0] == 2 and service.thumbnails.kept(run["id"]) == 2
    whole = client.get(f"{API}/runs/{run['id']}/thumbnails").json()
    assert whole["layers"] == [0, 6] and service.thumbnails.layers_computed == before + 6  # layers 2, 3 once
    np.testing.assert_array_equal(whole["means"][2:4], part["means"])
    bad = client.get(f"{API}/runs/{run['id']}/thumbnails", params={"layers": "3:9"})
    assert bad.status_code == 422 and "layers=" in bad.json()["detail"] and "6 layers" in bad.json()["detail"]


def test_thumbnails_of_an_unknown_run_are_404(client):
    r = client.get(f"{API}/runs/nope/thumbnails")
    assert r.status_code == 404 and "run" in r.json()["detail"]


def test_thumbnails_in_the_run_body_must_be_a_boolean(client):
    r = client.post(f"{API}/runs", json={"model": "minilm", "text": "a b", "thumbnails": "yes"})
    assert r.status_code == 422 and "thumbnails" in r.text
