"""Value-weighted maps of a post-norm encoder (MiniLM, BERT-style: the attention reads the stream
itself), against values read with a hand-placed hook; and the readouts that need an unembedding
refused with the part MiniLM lacks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.models.sites import SitesUnavailableError
from attnscope.pipelines.writes.readouts import attribution_of_run, lens_of_run
from attnscope.pipelines.writes.recorded import record_writes, value_weighted_source


@torch.inference_mode()
def test_value_weighted_maps_of_a_post_norm_encoder_equal_hooked_values(minilm):
    inp = minilm.encode_text("The cat sat on the mat because it was tired.")
    writes = record_writes(minilm, inp)
    layer = 2
    attn = minilm.model.encoder.layer[layer].attention
    got = {}
    handle = attn.self.value.register_forward_hook(lambda m, a, o: got.__setitem__("v", o))
    try:
        minilm.model(**{"input_ids": inp.ids_tensor(minilm.device)})
    finally:
        handle.remove()
    n_heads = minilm.model.config.num_attention_heads
    d_head = minilm.model.config.hidden_size // n_heads
    v = got["v"][0].reshape(len(inp), n_heads, d_head)  # [key, head, d_head]
    W_O = attn.output.dense.weight  # [d_model, head * d_head]
    a = writes.maps.block(layer)  # [head, query, key]
    raw = value_weighted_source(writes).block(layer, list(range(n_heads)), slice(None), slice(None))
    for h in range(n_heads):
        norms = (v[:, h] @ W_O[:, h * d_head : (h + 1) * d_head].T).norm(dim=-1)  # [key]
        np.testing.assert_allclose(raw[h], a[h] * norms.numpy()[None], atol=1e-5, rtol=1e-4)


def test_lens_and_attribution_name_what_an_encoder_lacks(minilm):
    ids = minilm.encode_text("The cat sat.").token_ids
    with pytest.raises(SitesUnavailableError, match="unembed.*outputs its last stream as an embedding"):
        lens_of_run(minilm, ids, 0, 1, k=3)
    with pytest.raises(SitesUnavailableError, match="unembed"):
        attribution_of_run(minilm, ids, 0)
