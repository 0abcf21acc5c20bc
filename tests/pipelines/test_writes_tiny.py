"""Logit lens, direct logit attribution and value-weighted maps on a tiny pre-norm decoder written
from the equations (``tiny_prenorm.py``): closed forms where weights are planted, conservation
(the parts sum to the logit) where they are random."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tiny_prenorm import TinyParams, forward

from attnscope.models.lazy_maps import QKLayer, QKMapSource
from attnscope.pipelines.writes.dla import BlockWrites, direct_logit_attribution
from attnscope.pipelines.writes.frozen_norm import FinalNorm
from attnscope.pipelines.writes.lens import Unembedding, logit_lens
from attnscope.pipelines.writes.value_maps import ValueWeightedSource, value_norms

IDS = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])


def final_norm(p: TinyParams) -> FinalNorm:
    return FinalNorm(p.norm, p.w["nf_w"], p.w["nf_b"], p.eps)


def blocks_at(p: TinyParams, rec: dict, i: int, split: bool = True) -> list[BlockWrites]:
    return [
        BlockWrites(
            z=rec["z"][layer][i],
            W_O=p.w[layer]["W_O"],
            b_O=p.w[layer]["b_O"],
            mlp=rec["mlp"][layer][i],
            probs=rec["probs"][layer][:, i] if split else None,
            values=rec["values"][layer] if split else None,
        )
        for layer in range(p.n_layers)
    ]


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_final_norm_equals_torch_and_its_frozen_readout_is_exact_on_the_clean_residual(kind):
    g = torch.Generator().manual_seed(1)
    w, b = 1 + torch.randn(8, generator=g) * 0.3, torch.randn(8, generator=g) if kind == "layernorm" else None
    norm = FinalNorm(kind, w, b, 1e-5)
    x = torch.randn(5, 8, generator=g) * 3
    ref = F.layer_norm(x, (8,), w, b, 1e-5) if kind == "layernorm" else F.rms_norm(x, (8,), w, 1e-5)
    torch.testing.assert_close(norm(x), ref, atol=1e-6, rtol=1e-6)
    u = torch.randn(8, generator=g)
    for row in x:
        r = norm.readout(u, norm.scale(row))
        assert float(row @ r + norm.bias_term(u)) == pytest.approx(float(norm(row) @ u), abs=1e-5)


def test_an_rmsnorm_with_a_bias_or_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="no bias"):
        FinalNorm("rmsnorm", None, torch.zeros(3), 1e-6)
    with pytest.raises(ValueError, match="unknown norm kind"):
        FinalNorm("batchnorm", None, None, 1e-6)


def test_planted_uniform_copy_head_has_its_closed_form_parts():
    """One block: a head with W_Q = W_K = 0 attends uniformly over the prefix, copies the normalised
    embeddings (W_V = W_O = I, with RMSNorm weight 1 and eps 0 before it), the MLP writes 0, the final
    RMSNorm has weight 1, W_U = I. Then at position i the residual is e_i + mean_{j<=i} n(e_j) and
    the logit of token t splits into e_i[t]/s + sum_j n(e_j)[t] / ((i+1) s)."""
    p = TinyParams(vocab=6, d_model=6, n_heads=1, n_kv=1, d_head=6, n_layers=1, norm="rmsnorm", eps=0.0)
    eye = torch.eye(6)
    p.w.update(E=torch.eye(6) * 2.0, P=torch.zeros(p.n_ctx, 6), W_U=eye, nf_w=torch.ones(6))
    p.w[0].update(
        n1_w=torch.ones(6), W_Q=torch.zeros(6, 1, 6), W_K=torch.zeros(6, 1, 6), W_V=eye[:, None, :],
        b_V=torch.zeros(1, 6), W_O=eye[None], b_O=torch.zeros(6), W_out=torch.zeros(p.d_mlp, 6),
        b_out=torch.zeros(6),
    )  # fmt: skip
    ids = torch.tensor([0, 2, 2, 5])
    rec = forward(p, ids)
    i, t = 3, 2
    normed = F.normalize(p.w["E"][ids], dim=-1) * 6**0.5  # rms-normalised one-hots, [pos, d]
    x = p.w["E"][ids[i]] + normed[: i + 1].mean(0)
    s = float(x.pow(2).mean().sqrt())
    att = direct_logit_attribution(
        rec["resid"][0][i], blocks_at(p, rec, i), rec["resid"][-1][i], final_norm(p), Unembedding(p.w["W_U"]), t
    )
    assert att.embed == pytest.approx(0.0)  # e_5 has no component on token 2
    assert att.heads[0, 0] == pytest.approx(float(normed[: i + 1, t].sum()) / (i + 1) / s, abs=1e-6)
    expected_sources = normed[: i + 1, t] / (i + 1) / s
    np.testing.assert_allclose(att.sources[0, 0, : i + 1], expected_sources.numpy(), atol=1e-6)
    assert att.mlp[0] == 0.0 and att.bias == 0.0
    assert att.logit == pytest.approx(float(rec["logits"][i, t]), abs=1e-6)


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("contrast", [None, 7])
def test_dla_parts_sum_to_the_models_logit_and_sources_to_their_head(kind, contrast):
    p = TinyParams(norm=kind, seed=3)
    rec = forward(p, IDS)
    unembed = Unembedding(p.w["W_U"], p.w["b_U"])
    for i in (0, 4, len(IDS) - 1):
        for t in (0, 5, 12):
            att = direct_logit_attribution(
                rec["resid"][0][i], blocks_at(p, rec, i), rec["resid"][-1][i], final_norm(p), unembed, t, contrast
            )
            want = float(rec["logits"][i, t] - (0 if contrast is None else rec["logits"][i, contrast]))
            assert att.logit == pytest.approx(want, abs=1e-5)
            assert abs(att.residual_error) < 1e-4
            assert att.total() == pytest.approx(want, abs=1e-4)
            assert att.heads.shape == (p.n_layers, p.n_heads)
            np.testing.assert_allclose(att.sources.sum(-1), att.heads, atol=1e-5)
            assert np.all(att.sources[:, :, i + 1 :] == 0.0)  # causal: no key after the target position


def test_dla_without_probs_gives_no_split_and_a_wrong_residual_shows_as_error():
    p = TinyParams(seed=4)
    rec = forward(p, IDS)
    args = (final_norm(p), Unembedding(p.w["W_U"], p.w["b_U"]), 2)
    att = direct_logit_attribution(rec["resid"][0][5], blocks_at(p, rec, 5, split=False), rec["resid"][-1][5], *args)
    assert att.sources is None and abs(att.residual_error) < 1e-4
    # a block left out: the parts no longer add up to the residual, and residual_error says so
    att = direct_logit_attribution(rec["resid"][0][5], blocks_at(p, rec, 5)[1:], rec["resid"][-1][5], *args)
    assert abs(att.residual_error) > 1e-2


def test_dla_refuses_token_ids_outside_the_vocabulary():
    p = TinyParams()
    rec = forward(p, IDS)
    with pytest.raises(ValueError, match="outside"):
        direct_logit_attribution(
            rec["resid"][0][0], blocks_at(p, rec, 0), rec["resid"][-1][0], final_norm(p), Unembedding(p.w["W_U"]), 13
        )


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_last_layer_lens_is_the_models_next_token_distribution(kind):
    p = TinyParams(norm=kind, seed=5)
    rec = forward(p, IDS)
    unembed = Unembedding(p.w["W_U"], p.w["b_U"])
    resid = torch.stack(rec["resid"])  # [layer + 1, pos, d]
    rows = logit_lens(resid.reshape(-1, p.d_model), final_norm(p), unembed, k=p.vocab)
    probs = torch.softmax(rec["logits"], -1)
    last = slice(p.n_layers * len(IDS), None)
    got = np.zeros((len(IDS), p.vocab), np.float32)
    np.put_along_axis(got, rows.top_ids[last], rows.top_probs[last], axis=1)
    np.testing.assert_allclose(got, probs.numpy(), atol=1e-5)
    assert np.all(rows.target_rank == 0)  # default target: each row's own top token
    np.testing.assert_array_equal(rows.target[last], probs.argmax(-1).numpy())
    ent = -(probs * probs.log()).sum(-1)
    np.testing.assert_allclose(rows.entropy[last], ent.numpy(), atol=1e-5)


def test_lens_target_rank_and_probability_match_a_sort():
    p = TinyParams(seed=6)
    rec = forward(p, IDS)
    resid = torch.stack(rec["resid"]).reshape(-1, p.d_model)
    target = torch.full((resid.shape[0],), 4)
    rows = logit_lens(resid, final_norm(p), Unembedding(p.w["W_U"], p.w["b_U"]), k=3, target=target)
    logits = F.layer_norm(resid, (p.d_model,), p.w["nf_w"], p.w["nf_b"], p.eps) @ p.w["W_U"] + p.w["b_U"]
    order = logits.argsort(-1, descending=True)
    want_rank = (order == 4).float().argmax(-1)
    np.testing.assert_array_equal(rows.target_rank, want_rank.numpy())
    np.testing.assert_allclose(rows.target_prob, torch.softmax(logits, -1)[:, 4].numpy(), atol=1e-6)
    np.testing.assert_array_equal(rows.top_ids, order[:, :3].numpy())


def test_lens_refuses_k_outside_the_vocabulary_and_targets_out_of_range():
    p = TinyParams()
    resid = torch.zeros(2, p.d_model) + 1
    unembed = Unembedding(p.w["W_U"])
    with pytest.raises(ValueError, match="outside"):
        logit_lens(resid, final_norm(p), unembed, k=p.vocab + 1)
    with pytest.raises(ValueError, match="target ids"):
        logit_lens(resid, final_norm(p), unembed, k=2, target=torch.tensor([0, p.vocab]))


def test_value_weighted_maps_equal_an_eager_reference_and_serve_lazily():
    p = TinyParams(seed=7)  # grouped-query: 4 query heads share 2 value heads
    rec = forward(p, IDS)
    n = len(IDS)
    layers, norms = [], []
    for layer in range(p.n_layers):
        a, v, W_O = rec["probs"][layer], rec["values"][layer], p.w[layer]["W_O"]
        vv = v.repeat_interleave(p.n_heads // p.n_kv, 0)
        eager = torch.stack(
            [torch.stack([(a[h, :, j, None] * (vv[h, j] @ W_O[h])).norm(dim=-1) for j in range(n)], -1)
             for h in range(p.n_heads)]
        )  # fmt: skip  # [head, query, key]
        norms.append(value_norms(v, W_O).numpy())
        np.testing.assert_allclose(a.numpy() * norms[-1][:, None, :], eager.numpy(), atol=1e-5)
        layers.append(QKLayer(query=rec["query"][layer], key=rec["key"][layer], mask=None, is_causal=True,
                              scale=p.d_head**-0.5))  # fmt: skip
    weights = QKMapSource(layers)
    np.testing.assert_allclose(weights.block(1, [0, 3], slice(None), slice(None)), rec["probs"][1][[0, 3]].numpy(),
                               atol=1e-6)  # fmt: skip
    src = ValueWeightedSource(weights, norms)
    want = rec["probs"][2][[1, 2], 3:7, 1:5].numpy() * norms[2][[1, 2]][:, None, 1:5]
    np.testing.assert_allclose(src.block(2, [1, 2], slice(3, 7), slice(1, 5)), want, atol=1e-6)
    normed = ValueWeightedSource(weights, norms, normalize=True).block(0, [0, 1, 2, 3], slice(None), slice(None))
    np.testing.assert_allclose(normed.sum(-1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="norm tables"):
        ValueWeightedSource(weights, norms[:2])
