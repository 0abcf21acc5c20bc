"""The contribution graph of one prediction on the real SmolLM2, read through its ``Sites`` and one
recording: conservation at every node (the terms entering a node sum to its value; the importances
into it sum to 1), and its edge weights against an independent computation from hooks placed by hand
on the Hugging Face modules (queries, keys and values from the projections, RoPE and softmax
written out)."""

from __future__ import annotations

import pytest
import torch

from attnscope.pipelines.writes.graph import GraphTooLargeError, attention_terms, contribution_graph, importances
from attnscope.pipelines.writes.graph_run import graph_inputs, graph_of_run
from attnscope.pipelines.writes.readouts import WritesInputError
from attnscope.pipelines.writes.recorded import attribute, record_writes

pytestmark = pytest.mark.slow
TEXT = "The capital of France is"


@pytest.fixture(scope="module")
def run(smollm2):
    inp = smollm2.encode_text(TEXT)
    writes = record_writes(smollm2, inp)
    return inp, writes, contribution_graph(*graph_inputs(writes), len(inp) - 1, threshold=0.0, max_nodes=10**5)


def test_contributions_into_every_node_sum_to_its_value(run):
    inp, writes, g = run
    blocks, final = graph_inputs(writes)
    incoming: dict = {}
    for _, t, _, w in g.edges:
        incoming[t] = incoming.get(t, 0.0) + w
    expanded = [n for n in g.nodes if n in incoming]
    assert len(expanded) > 2 * len(inp)
    for kind, layer, i in expanded:
        assert incoming[(kind, layer, i)] == pytest.approx(1.0, abs=1e-5)  # SmolLM2 has no b_O: nothing else shares
        if kind == "mid":  # pre_i + sum over heads and keys of a_hij v_hj W_O[h] is the stream after attention
            blk = blocks[layer]
            post = final if layer == len(blocks) - 1 else blocks[layer + 1].pre
            terms = attention_terms(blk, i, blk.values())
            torch.testing.assert_close(blk.pre[i] + terms.sum((0, 1)), post[i] - blk.mlp[i], atol=2e-4, rtol=1e-4)


def test_the_logits_direct_parts_sum_to_the_logit_minus_the_bias_term(smollm2, run):
    inp, writes, _ = run
    att = attribute(writes, len(inp) - 1, int(smollm2.tokenizer(" Paris", add_special_tokens=False)["input_ids"][0]))
    direct = att.embed + (att.heads.sum(-1) + att.attn_bias).sum() + att.mlp.sum()
    assert direct == pytest.approx(att.logit - att.bias, abs=1e-4)


@torch.inference_mode()
def test_edge_weights_equal_a_hand_hooked_computation(smollm2, run):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    inp, _, g = run
    model = smollm2.model
    cfg = model.config
    n_heads, n_kv, d_head = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    layer = 20
    attn = model.model.layers[layer].self_attn
    got, handles = {}, []
    for name in ("q_proj", "k_proj", "v_proj"):
        handles.append(getattr(attn, name).register_forward_hook(lambda m, a, o, name=name: got.__setitem__(name, o)))
    handles.append(model.model.layers[layer].register_forward_pre_hook(lambda m, a: got.__setitem__("pre", a[0])))
    handles.append(attn.register_forward_hook(lambda m, a, o: got.__setitem__("attn", o[0])))
    try:
        ids = inp.ids_tensor(smollm2.device)
        model.model(input_ids=ids, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    n = ids.shape[1]
    q = got["q_proj"][0].float().reshape(n, n_heads, d_head).transpose(0, 1)  # [head, pos, d_head]
    k = got["k_proj"][0].float().reshape(n, n_kv, d_head).transpose(0, 1)
    v = got["v_proj"][0].float().reshape(n, n_kv, d_head).transpose(0, 1)
    cos, sin = model.model.rotary_emb(got["pre"], torch.arange(n)[None])
    q, k = apply_rotary_pos_emb(q[None], k[None], cos, sin)
    rep = n_heads // n_kv
    k, v = k[0].repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
    scores = q[0] @ k.transpose(1, 2) / d_head**0.5 + torch.triu(torch.full((n, n), float("-inf")), 1)
    a = scores.softmax(-1)  # [head, query, key]
    W_O = attn.o_proj.weight.float()  # [d_model, head * d_head]
    i = n - 1
    terms = torch.stack([a[h, i, :, None] * (v[h] @ W_O[:, h * d_head : (h + 1) * d_head].T) for h in range(n_heads)])
    torch.testing.assert_close(terms.sum((0, 1)), got["attn"][0, i].float(), atol=1e-4, rtol=1e-4)
    pre = got["pre"][0, i].float()
    mid = pre + got["attn"][0, i].float()
    want = importances(mid, torch.cat([pre[None], terms.sum(0)]))
    edges = {(s, kind): w for s, t, kind, w in g.edges if t == ("mid", layer, i)}
    assert edges[(("pre", layer, i), "residual")] == pytest.approx(float(want[0]), abs=1e-4)
    for j in range(n):
        assert edges[(("pre", layer, j), "attention")] == pytest.approx(float(want[1 + j]), abs=1e-4)
    head_want = importances(mid, terms.reshape(-1, terms.shape[-1])).reshape(n_heads, n)
    src = ("pre", layer, 0)
    torch.testing.assert_close(torch.as_tensor(g.heads[(src, ("mid", layer, i))]), head_want[:, 0], atol=1e-4, rtol=0)


def test_graph_of_run_checks_its_bounds(smollm2, run):
    inp, writes, _ = run
    ids = inp.token_ids
    with pytest.raises(WritesInputError, match="out of range"):
        graph_of_run(smollm2, ids, len(ids), 0.1, 100, lambda: writes)
    with pytest.raises(WritesInputError, match="outside"):
        graph_of_run(smollm2, ids, 0, 1.5, 100, lambda: writes)
    with pytest.raises(GraphTooLargeError, match="passed 10 nodes"):
        graph_of_run(smollm2, ids, len(ids) - 1, 0.0, 10, lambda: writes)
    res = graph_of_run(smollm2, ids, len(ids) - 1, 0.1, 500, lambda: writes)
    assert ("pre", smollm2.sites.n_layers, len(ids) - 1) in res.graph.nodes
    assert all(w >= 0.1 for *_, w in res.graph.edges)


def test_node_importances_on_a_long_row_equal_a_float64_computation(smollm2):
    """On 512 tokens (rows long enough that most keys skip the overshoot), twelve nodes' source edges
    and head shares equal the proximities of their dense terms computed in float64 (to 1e-6; the
    subtraction of two float32 L1 norms misses by up to ~4e-4 here)."""
    import sys
    from pathlib import Path

    from attnscope.pipelines.writes.graph import node_importances, written

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from lazy import long_text

    writes = record_writes(smollm2, smollm2.encode_ids(long_text(smollm2.tokenizer, 512)))
    blocks, final = graph_inputs(writes)
    n = writes.n_tokens

    def exact(y, parts):
        prox = (y.abs().sum() - (y - parts).abs().sum(-1)).clamp_min(0.0)
        return prox / prox.sum()

    for layer in (29, 20, 10, 3):
        blk = blocks[layer]
        post = final if layer == len(blocks) - 1 else blocks[layer + 1].pre
        u = written(blk.values(), blk.W_O, n)
        for i in (n - 1, 200, 37):
            y = post[i].float() - blk.mlp[i].float()
            a = blk.probs(i).float()
            terms = a[:, :, None].double() * u[:, : a.shape[1]].double()  # [head, key, d_model]
            imp, heads = node_importances(y, blk.pre[i], blk.b_O, a, u)
            y64 = y.double()
            torch.testing.assert_close(
                imp.double(), exact(y64, torch.cat([blk.pre[i].double()[None], terms.sum(0)])), atol=1e-6, rtol=0
            )
            torch.testing.assert_close(heads.double(), exact(y64, terms), atol=1e-6, rtol=0)
