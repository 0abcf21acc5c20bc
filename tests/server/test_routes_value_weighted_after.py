"""Value-weighted maps over HTTP where they were missing (issue 23 item 3):

- an intervention's altered run: ``POST /runs/{altered}/value-weighted`` serves the altered weights
  times the altered forward's own value norms, equal to an eager copy of MiniLM with hand-placed
  hooks that zero the ablated heads and read the altered values (``tests/value_weighted_reference.py``),
  to 1e-5; the routes that would run the clean model again (lens, attribution, graph) still refuse it;
- a vision run (the zoo's ViT on an MNIST digit, through the zoo family's ``Sites`` entry): its
  value-weighted maps equal ``a_ij ||v_j W_O[h]||`` computed here from values read with a hook on
  a copy of the model loaded in the test, each row normalised, to 1e-5."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from value_weighted_reference import hooked_value_weighted, normalised

from attnscope.server.config import Settings
from attnscope.server.main import create_app

pytestmark = pytest.mark.slow
API = "/api/v1"
TEXT = "a gorgeous, witty, seductive movie."


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(preload=[], max_runs=16))) as c:
        yield c


def _maps(client, run_id: str, layer: int) -> np.ndarray:
    r = client.get(f"{API}/runs/{run_id}/attention", params={"layer": layer})
    assert r.status_code == 200, r.text
    return np.asarray(r.json()["weights"], dtype=np.float64)


def test_an_altered_runs_value_weighted_maps_equal_a_hooked_ablation_of_minilm(client):
    from transformers import AutoModel

    from attnscope.models.loading import _hf_folder
    from attnscope.models.registry import get_spec

    run = client.post(f"{API}/runs", json={"model": "minilm", "text": TEXT}).json()
    ablate = [[1, 4], [3, 0]]
    r = client.post(
        f"{API}/runs/{run['id']}/interventions", json={"interventions": [{"kind": "ablate", "heads": ablate}]}
    )
    assert r.status_code == 200, r.text
    altered = r.json()["altered_run_id"]
    vw = client.post(f"{API}/runs/{altered}/value-weighted")
    assert vw.status_code == 200, vw.text
    vw_id = vw.json()["value_weighted_run_id"]
    assert vw.json()["shape"] == run["shape"]
    clean_vw = client.post(f"{API}/runs/{run['id']}/value-weighted").json()["value_weighted_run_id"]
    assert clean_vw != vw_id

    eager = AutoModel.from_pretrained(_hf_folder(get_spec("minilm")), attn_implementation="eager").eval()
    layers = eager.encoder.layer
    n_heads = eager.config.num_attention_heads
    ref, _ = hooked_value_weighted(
        eager,
        eager.config.num_hidden_layers,
        lambda i: layers[i].attention.self.value,
        lambda i: layers[i].attention.output.dense,
        n_heads,
        n_heads,
        [tuple(h) for h in ablate],
        input_ids=torch.tensor([run["token_ids"]]),
    )
    for layer in range(eager.config.num_hidden_layers):
        np.testing.assert_allclose(_maps(client, vw_id, layer), normalised(ref[layer]), atol=1e-5)
    # a head zeroed in layer 1 changes layer 2's value-weighted maps; layer 1's stay the clean ones
    assert np.abs(_maps(client, vw_id, 2) - _maps(client, clean_vw, 2)).max() > 1e-3
    np.testing.assert_allclose(_maps(client, vw_id, 1), _maps(client, clean_vw, 1), atol=1e-5)
    for path, payload in (("lens", {"positions": "0:1"}), ("attribution", {}), ("graph", {})):
        refused = client.post(f"{API}/runs/{altered}/{path}", json=payload)
        assert refused.status_code == 422, (path, refused.text)
        assert "an intervention" in refused.text and "original run" in refused.text
    again = client.post(f"{API}/runs/{vw_id}/value-weighted")  # value-weighted maps of value-weighted maps: no
    assert again.status_code == 422 and "the value-weighted maps" in again.text


def test_a_vision_runs_value_weighted_maps_equal_hooked_values(client):
    from attnscope.models.loading import load_model
    from attnscope.models.zoo import data, samples
    from attnscope.models.zoo.manifest import read_manifest

    if read_manifest("vit") is None or not data.available():
        pytest.skip("the zoo's vit or the MNIST data is missing (make zoo; ATTNSCOPE_DATA_DIR)")
    run = client.post(f"{API}/runs", json={"model": "vit", "sample": {"dataset": "mnist", "index": 0}})
    assert run.status_code == 201, run.text
    run = run.json()
    vw = client.post(f"{API}/runs/{run['id']}/value-weighted")
    assert vw.status_code == 200, vw.text
    vw_id = vw.json()["value_weighted_run_id"]

    backend = load_model("vit", device="cpu")
    inp = backend.encode_image(backend.prepare_image(samples.sample("mnist", 0)[0]))
    blocks = backend.model.encoder.blocks
    values = {}
    handles = [
        b.attn.v.register_forward_hook(lambda m, a, o, i=i: values.__setitem__(i, o.detach()))
        for i, b in enumerate(blocks)
    ]
    try:
        weights = backend.run(inp).maps
    finally:
        for h in handles:
            h.remove()
    n_heads = weights.shape[1]
    for layer in range(len(blocks)):
        a = _maps(client, run["id"], layer)
        np.testing.assert_allclose(a, weights.layer(layer), atol=1e-6)  # the same weights as the test's copy
        W_O = blocks[layer].attn.out.weight.detach().double()  # [d_model, head * d_head]
        d = W_O.shape[1] // n_heads
        v = values[layer][0].double().reshape(a.shape[-1], n_heads, d)  # [key, head, d_head]
        norms = np.stack([(v[:, h] @ W_O[:, h * d : (h + 1) * d].T).norm(dim=-1).numpy() for h in range(n_heads)])
        np.testing.assert_allclose(_maps(client, vw_id, layer), normalised(a * norms[:, None, :]), atol=1e-5)
    assert np.abs(_maps(client, vw_id, 0) - _maps(client, run["id"], 0)).max() > 1e-3
