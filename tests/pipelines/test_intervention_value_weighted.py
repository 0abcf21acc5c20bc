"""Value-weighted maps of an intervention's altered forward (issue 23 item 3): the altered weights
times the altered forward's own value norms ``||v'_j W_O[h]||`` (``intervene``'s
``altered_value_norms``), checked

- on a tiny random Llama (grouped-query heads, ``tests/conftest.py``) with a planted answer: a
  uniform ablation of head ``(0, h)`` makes its weights ``1/(i+1)``, and block 0's input is not
  changed by its own heads, so its value-weighted row is the clean value norms normalised over the
  visible keys;
- on the tiny Llama and on MiniLM (post-norm) against an independent computation: an eager copy of
  the model with hand-placed hooks that zero the ablated head and read the altered values
  (``tests/value_weighted_reference.py``), to 1e-5;
- a head ablated in layer ``L`` leaves the maps of layers ``<= L`` as they were and changes later
  layers' (their values are computed from the altered stream)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from value_weighted_reference import hooked_value_weighted, normalised

from attnscope.pipelines.interventions import HeadAblation, InterventionSet, intervene
from attnscope.pipelines.writes.recorded import record_writes, value_weighted_of_norms
from attnscope.pipelines.writes.value_maps import ValueWeightedSource

pytestmark = pytest.mark.slow
PROMPT = "The capital of France is Paris, and the cat sat on the mat."


@pytest.fixture(scope="module")
def llama(tiny_causal_lms):
    """``(backend, eager transformers model)`` of the tiny Llama checkpoint."""
    from transformers import AutoModelForCausalLM

    from attnscope.models.loading import load_model

    root, folders = tiny_causal_lms
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
        backend = load_model("local:llama", device="cpu")
    eager = AutoModelForCausalLM.from_pretrained(folders["llama"], attn_implementation="eager", dtype=torch.float32)
    return backend, eager.eval()


def _raw(res) -> np.ndarray:
    """``[layer, head, query, key]`` ``a'_ij ||v'_j W_O[h]||`` of an intervention's altered forward."""
    src = ValueWeightedSource(res["altered_maps"], res["altered_value_norms"])
    n_l, n_h = res["altered_maps"].shape[:2]
    return np.stack([src.block(layer, list(range(n_h)), slice(None), slice(None)) for layer in range(n_l)])


def _llama_reference(eager, inp, ablate=()) -> tuple[np.ndarray, np.ndarray]:
    cfg = eager.config
    layers = eager.model.layers
    return hooked_value_weighted(
        eager,
        cfg.num_hidden_layers,
        lambda i: layers[i].self_attn.v_proj,
        lambda i: layers[i].self_attn.o_proj,
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        ablate,
        input_ids=inp.ids_tensor(),
        use_cache=False,
    )


def test_uniform_ablation_gives_the_clean_value_norms_normalised_over_the_visible_keys(llama):
    backend, eager = llama
    inp = backend.encode_text(PROMPT)
    n, head = len(inp), 1
    res = intervene(backend, inp, InterventionSet((HeadAblation(((0, head),), "uniform"),)))
    _, norms = _llama_reference(eager, inp)  # block 0's values do not depend on its own heads
    planted = np.tril(np.broadcast_to(norms[0, head], (n, n)))
    planted = planted / planted.sum(-1, keepdims=True)
    vw = value_weighted_of_norms(res["altered_maps"], res["altered_value_norms"])
    np.testing.assert_allclose(vw.block(0, [head])[0], planted, atol=1e-5)
    np.testing.assert_allclose(
        res["altered_maps"].block(0, [head])[0], np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None], atol=1e-6
    )


@pytest.mark.parametrize("ablate", [((0, 1),), ((1, 3), (0, 0))])
def test_altered_value_weighted_maps_of_a_tiny_llama_equal_hooked_values(llama, ablate):
    backend, eager = llama
    inp = backend.encode_text(PROMPT)
    res = intervene(backend, inp, InterventionSet((HeadAblation(ablate, "zero"),)))
    ref, _ = _llama_reference(eager, inp, ablate)
    got = _raw(res)
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=1e-4)
    vw = value_weighted_of_norms(res["altered_maps"], res["altered_value_norms"])
    for layer in range(ref.shape[0]):
        np.testing.assert_allclose(vw.layer(layer), normalised(ref[layer]), atol=1e-5)


def test_a_head_ablated_in_layer_l_changes_only_later_layers_value_weighted_maps(llama, minilm):
    for backend, layer in ((llama[0], 0), (minilm, 2)):
        inp = backend.encode_text(PROMPT)
        clean = value_weighted_of_norms(*_clean(backend, inp))
        res = intervene(backend, inp, InterventionSet((HeadAblation(((layer, 1),), "zero"),)))
        vw = value_weighted_of_norms(res["altered_maps"], res["altered_value_norms"])
        for lay in range(backend.n_layers):
            change = float(np.abs(vw.layer(lay) - clean.layer(lay)).max())
            if lay <= layer:
                assert change < 1e-5, (backend.spec.name, lay, change)
            else:
                assert change > 1e-3, (backend.spec.name, lay, change)


def _clean(backend, inp):
    writes = record_writes(backend, inp)
    return writes.maps, [writes.value_norms(layer) for layer in range(backend.n_layers)]


def test_altered_value_weighted_maps_of_minilm_equal_hooked_values(minilm):
    """MiniLM (BERT, post-norm: the attention reads the stream itself) with two heads zeroed in
    layers 1 and 3, against an eager copy of the checkpoint with hand-placed hooks."""
    from transformers import AutoModel

    from attnscope.models.loading import _hf_folder

    eager = AutoModel.from_pretrained(_hf_folder(minilm.spec), attn_implementation="eager").eval()
    inp = minilm.encode_text(PROMPT)
    ablate = ((1, 4), (3, 0))
    res = intervene(minilm, inp, InterventionSet((HeadAblation(ablate, "zero"),)))
    cfg = eager.config
    layers = eager.encoder.layer
    ref, _ = hooked_value_weighted(
        eager,
        cfg.num_hidden_layers,
        lambda i: layers[i].attention.self.value,
        lambda i: layers[i].attention.output.dense,
        cfg.num_attention_heads,
        cfg.num_attention_heads,
        ablate,
        input_ids=inp.ids_tensor(),
    )
    np.testing.assert_allclose(_raw(res), ref, atol=1e-5, rtol=1e-4)
    vw = value_weighted_of_norms(res["altered_maps"], res["altered_value_norms"])
    np.testing.assert_allclose(vw.layer(4), normalised(ref[4]), atol=1e-5)
