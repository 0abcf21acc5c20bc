"""The query/key view and the QK attribution on random tensors, against independent computations:
the norms of torch (layer_norm) and written from their formulas (RMSNorm), transformers' own RoPE
(``apply_rotary_pos_emb``), grouped-query heads; the terms sum to the score."""

from __future__ import annotations

import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from attnscope.pipelines.qk.linear_maps import FrozenNorm, Rope
from attnscope.pipelines.qk.qk_attribution import KEY_BIAS, NORM_BIAS, QUERY_BIAS, qk_attribution
from attnscope.pipelines.qk.qk_view import HeadQK, check_pair, kv_head_of, qk_view

D_MODEL, D_HEAD, N_TOK, N_PARTS = 24, 8, 10, 7


def _setup(kind: str, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    parts = torch.randn(N_PARTS, N_TOK, D_MODEL, generator=g)  # [part, token, d_model]
    norm = FrozenNorm(
        kind=kind,
        weight=1 + 0.3 * torch.randn(D_MODEL, generator=g),
        bias=0.2 * torch.randn(D_MODEL, generator=g) if kind == "layer" else None,
        eps=1e-5,
    )
    rope = Rope.from_theta(N_TOK, D_HEAD)
    head = HeadQK(
        w_q=torch.randn(D_MODEL, D_HEAD, generator=g) / D_MODEL**0.5,
        b_q=0.3 * torch.randn(D_HEAD, generator=g),
        w_k=torch.randn(D_MODEL, D_HEAD, generator=g) / D_MODEL**0.5,
        b_k=0.3 * torch.randn(D_HEAD, generator=g),
        kv_head=kv_head_of(5, n_heads=6, n_kv_heads=2),
        scale=D_HEAD**-0.5,
        rope=rope,
    )
    return parts, norm, rope, head


def _reference_scores(parts, norm, rope, head):
    """``[query, key]`` scores written independently: torch's layer_norm or RMSNorm's formula,
    transformers' apply_rotary_pos_emb."""
    x = parts.sum(0).double()
    w = norm.weight.double()
    if norm.kind == "layer":
        y = torch.nn.functional.layer_norm(x, (D_MODEL,), w, norm.bias.double(), norm.eps)
    else:
        y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + norm.eps) * w
    q = y @ head.w_q.double() + head.b_q.double()
    k = y @ head.w_k.double() + head.b_k.double()
    q, k = apply_rotary_pos_emb(q[None, None], k[None, None], rope.cos[None], rope.sin[None])
    return (q[0, 0] @ k[0, 0].T) * head.scale


@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_terms_sum_to_the_score(kind):
    parts, norm, rope, head = _setup(kind)
    ref = _reference_scores(parts, norm, rope, head)
    labels = [f"p{c}" for c in range(N_PARTS)]
    for i, j in [(9, 3), (4, 4), (7, 0), (2, 8)]:
        att = qk_attribution(parts[:, i], parts[:, j], labels, head, i, j, norm=norm)
        assert abs(float(att.matrix.sum()) - float(ref[i, j])) < 1e-4
        assert att.conservation_error < 1e-9 and att.residual_error < 1e-5
        extra = [NORM_BIAS] if kind == "layer" else []
        assert att.query_labels == (*labels, *extra, QUERY_BIAS)
        assert att.key_labels == (*labels, *extra, KEY_BIAS)
        assert (
            torch.allclose(att.key_totals.sum(), att.matrix.sum()) and att.matrix.shape == (len(att.query_labels),) * 2
        )


def test_float32_parts_conserve_to_1e4():
    """The terms of float32 inputs (as the model records them) sum to the float32 score."""
    parts, norm, rope, head = _setup("rms", seed=3)
    parts = parts * 8  # residual streams of a real model are large
    x32 = norm(parts.sum(0))
    q = head.query(x32, torch.arange(N_TOK))
    k = head.key(x32, torch.arange(N_TOK))
    s32 = (q @ k.T) * head.scale
    att = qk_attribution(parts[:, 6], parts[:, 1], [str(c) for c in range(N_PARTS)], head, 6, 1, norm=norm)
    assert abs(float(att.matrix.sum()) - float(s32[6, 1])) < 1e-4


def test_frozen_scale_uses_the_clean_stream():
    """With a clean stream given, the scale is frozen there, not at the parts' sum: a subset of parts
    then sums to its own share of the clean score."""
    parts, norm, rope, head = _setup("rms", seed=1)
    resid = parts.sum(0)
    att = qk_attribution(
        parts[:3, 5], parts[:3, 2], ["a", "b", "c"], head, 5, 2, norm=norm, resid_query=resid[5], resid_key=resid[2]
    )
    assert att.residual_error > 0.1  # the subset is not the whole stream, and the result says so
    full = qk_attribution(parts[:, 5], parts[:, 2], [str(c) for c in range(N_PARTS)], head, 5, 2, norm=norm)
    assert torch.allclose(att.matrix[:3, :3], full.matrix[:3, :3])


@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_view_matches_the_reference(kind):
    parts, norm, rope, head = _setup(kind, seed=2)
    ref = _reference_scores(parts, norm, rope, head)
    resid = parts.sum(0)
    for causal in (True, False):
        i, j = 6, 2
        view = qk_view(resid, head, i, j, norm=norm, causal=causal)
        row = ref[i].clone()
        if causal:
            row[i + 1 :] = float("-inf")
        assert view.score == pytest.approx(float(ref[i, j]), abs=1e-4)
        assert view.weight == pytest.approx(float(torch.softmax(row, -1)[j]), abs=1e-5)
        assert float(view.product.sum()) * head.scale == pytest.approx(view.score, abs=1e-4)
        assert view.kv_head == 1


def test_rope_matches_transformers():
    rope = Rope.from_theta(N_TOK, D_HEAD, theta=500.0)
    x = torch.randn(N_TOK, D_HEAD, dtype=torch.float64)
    ref, _ = apply_rotary_pos_emb(x[None, None], x[None, None], rope.cos[None], rope.sin[None])
    assert torch.allclose(rope(x, torch.arange(N_TOK)), ref[0, 0])
    assert torch.allclose(rope(x[4], 4), ref[0, 0, 4])


def test_grouped_query_heads_and_bad_pairs():
    assert [kv_head_of(h, 9, 3) for h in range(9)] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    with pytest.raises(ValueError, match="evenly"):
        kv_head_of(0, 9, 2)
    with pytest.raises(ValueError, match=r"0\.\.9"):
        check_pair(10, 10, 0, causal=False)
    with pytest.raises(ValueError, match="after query"):
        check_pair(10, 3, 4, causal=True)
    check_pair(10, 3, 4, causal=False)


def test_condensed_matrix_keeps_the_sum():
    parts, norm, rope, head = _setup("layer", seed=4)
    att = qk_attribution(parts[:, 8], parts[:, 2], [f"p{c}" for c in range(N_PARTS)], head, 8, 2, norm=norm)
    q, k, m = att.condensed(3)
    assert len(q) == len(k) == 4 and q[-1] == k[-1] == "other" and m.shape == (4, 4)
    assert float(m.sum()) == pytest.approx(float(att.matrix.sum()), abs=1e-9)
    top_k = max(range(len(att.key_labels)), key=lambda c: abs(float(att.key_totals[c])))
    assert att.key_labels[top_k] in k
    q_all, k_all, m_all = att.condensed(100)
    assert q_all == att.query_labels and torch.equal(m_all, att.matrix)
