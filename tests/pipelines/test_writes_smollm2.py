"""The logit lens and direct logit attribution on the real SmolLM2, wired through its ``Sites`` and
one recording session, checked against the model's own output and against a forward read with
hand-placed hooks on the Hugging Face modules (independent of the anatomy table)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.pipelines.writes.readouts import WritesInputError, attribution_of_run, lens_of_run, single_token_id
from attnscope.pipelines.writes.recorded import attribute, lens_grid, record_writes

pytestmark = pytest.mark.slow
TEXT = "The capital of France is"


@pytest.fixture(scope="module")
def run(smollm2):
    inp = smollm2.encode_text(TEXT)
    with torch.inference_mode():
        logits = smollm2.model(input_ids=inp.ids_tensor(smollm2.device), use_cache=False).logits[0].float()
    return inp, record_writes(smollm2, inp), logits


def test_dla_parts_sum_to_the_models_logit(smollm2, run):
    inp, writes, logits = run
    n = len(inp)
    paris, london = single_token_id(smollm2, " Paris"), single_token_id(smollm2, " London")
    for pos in (n - 1, 2):
        for target, contrast in ((paris, None), (paris, london), (int(logits[pos].argmax()), None)):
            att = attribute(writes, pos, target, contrast)
            want = float(logits[pos, target] - (0.0 if contrast is None else logits[pos, contrast]))
            assert att.logit == pytest.approx(want, abs=1e-4)
            assert abs(att.total() - want) < 1e-4, att.residual_error
            np.testing.assert_allclose(att.sources.sum(-1), att.heads, atol=1e-4)


def test_last_layer_lens_is_the_models_next_token_distribution(smollm2, run):
    inp, writes, logits = run
    n = len(inp)
    vocab = logits.shape[-1]
    rows = lens_grid(writes, range(0, n), k=vocab)
    last = slice(smollm2.sites.n_layers * n, None)
    got = np.zeros((n, vocab), np.float32)
    np.put_along_axis(got, rows.top_ids[last], rows.top_probs[last], axis=1)
    np.testing.assert_allclose(got, torch.softmax(logits, -1).numpy(), atol=1e-5)


@torch.inference_mode()
def test_dla_equals_a_hand_hooked_forward(smollm2, run):
    """Hooks placed by hand on the HF Llama modules (o_proj's input, the MLP's output, each layer's
    input) and the readout written out: head h's part is z_h . (W_O[:, h] (w * W_U[:, t]) / s)."""
    inp, writes, _ = run
    model = smollm2.model
    layers, final = model.model.layers, model.model.norm
    n_heads, d_head = model.config.num_attention_heads, model.config.head_dim
    z, mlp, pre = {}, {}, {}
    handles = []
    try:
        for i, layer in enumerate(layers):
            handles.append(layer.self_attn.o_proj.register_forward_pre_hook(lambda m, a, i=i: z.__setitem__(i, a[0])))
            handles.append(layer.mlp.register_forward_hook(lambda m, a, o, i=i: mlp.__setitem__(i, o)))
            handles.append(layer.register_forward_pre_hook(lambda m, a, i=i: pre.__setitem__(i, a[0])))
        out = model.model(input_ids=inp.ids_tensor(smollm2.device), use_cache=False)
    finally:
        for h in handles:
            h.remove()
    pos, target = len(inp) - 1, single_token_id(smollm2, " Paris")
    # the last block's stream recomposed by hand, then the model's own norm
    last = pre[len(layers) - 1][0, pos] + layers[-1].self_attn.o_proj(z[len(layers) - 1][0, pos])
    last = last + mlp[len(layers) - 1][0, pos]
    torch.testing.assert_close(final(last[None])[0], out.last_hidden_state[0, pos], atol=1e-5, rtol=1e-5)
    s = torch.sqrt(last.float().pow(2).mean() + final.variance_epsilon)
    W_U = model.lm_head.weight  # [vocab, d_model]
    r = final.weight.float() * W_U[target].float() / s
    att = attribute(writes, pos, target)
    for i, layer in enumerate(layers):
        W_O = layer.self_attn.o_proj.weight.float()  # [d_model, n_heads * d_head]
        zi = z[i][0, pos].float().reshape(n_heads, d_head)
        by_hand = torch.stack([zi[h] @ (W_O[:, h * d_head : (h + 1) * d_head].T @ r) for h in range(n_heads)])
        np.testing.assert_allclose(att.heads[i], by_hand.numpy(), atol=1e-5)
        assert att.mlp[i] == pytest.approx(float(mlp[i][0, pos].float() @ r), abs=1e-5)
    assert att.embed == pytest.approx(float(pre[0][0, pos].float() @ r), abs=1e-5)


def test_readouts_of_a_run_check_their_input(smollm2, run):
    inp, _, _ = run
    ids = inp.token_ids
    with pytest.raises(WritesInputError, match="exactly one token"):
        attribution_of_run(smollm2, ids, len(ids) - 1, target=" Parisian capital")
    with pytest.raises(WritesInputError, match="out of range"):
        lens_of_run(smollm2, ids, 0, len(ids) + 1, k=3)
    with pytest.raises(WritesInputError, match="outside"):
        lens_of_run(smollm2, ids, 0, 1, k=10**6)
    grid = lens_of_run(smollm2, ids, len(ids) - 1, len(ids), k=3, target=" Paris")
    assert grid.layers == smollm2.sites.n_layers + 1 and grid.asked
    first = grid.first_top_layer(0)
    assert first is not None and 0 < first < grid.layers


@torch.inference_mode()
def test_value_weighted_maps_equal_an_eager_reference_from_hooked_values(smollm2, run):
    """Values read by hand from ``v_proj``'s output, each key's ``a_ij v_j W_O[h]`` formed as a
    ``[key, d_model]`` tensor and its norm taken: equal to the lazy value-weighted blocks."""
    from attnscope.pipelines.writes.recorded import value_weighted_maps, value_weighted_source

    inp, writes, _ = run
    model = smollm2.model
    layer, n = 7, len(inp)
    attn = model.model.layers[layer].self_attn
    got = {}
    handle = attn.v_proj.register_forward_hook(lambda m, a, o: got.__setitem__("v", o))
    try:
        model.model(input_ids=inp.ids_tensor(smollm2.device), use_cache=False)
    finally:
        handle.remove()
    n_heads, n_kv, d_head = model.config.num_attention_heads, model.config.num_key_value_heads, model.config.head_dim
    v = got["v"][0].float().reshape(n, n_kv, d_head)  # [key, kv_head, d_head]
    W_O = attn.o_proj.weight.float()  # [d_model, head * d_head]
    a = writes.maps.block(layer)  # [head, query, key]
    raw = value_weighted_source(writes).block(layer, [0, 4, 8], slice(None), slice(None))
    for idx, h in enumerate((0, 4, 8)):
        out = v[:, h // (n_heads // n_kv)] @ W_O[:, h * d_head : (h + 1) * d_head].T  # [key, d_model]
        eager = torch.as_tensor(a[h])[:, :, None] * out[None]  # [query, key, d_model]
        np.testing.assert_allclose(raw[idx], eager.norm(dim=-1).numpy(), atol=1e-5, rtol=1e-4)
    vw = value_weighted_maps(writes)
    assert vw.shape == writes.maps.shape and vw.causal
    np.testing.assert_allclose(vw.layer(layer).sum(-1), 1.0, atol=1e-5)
