"""A two-layer model with the induction mechanism planted by hand (Elhage et al. 2021; Olsson et al.
2022): layer 0 head 0 attends to the previous token and writes that token's identity into a "previous
token" subspace; layer 1 head 0's query reads the current token and its key reads the previous-token
subspace, so at the second copy of a repeated sequence it attends to the token after the earlier
occurrence. The QK attribution must name L0H0 as the top key-side part and the embedding as the top
query-side part; the composition scores must find the K-composition L0H0 -> L1H0 (and no Q-composition)."""

from __future__ import annotations

import pytest
import torch

from attnscope.pipelines.qk.composition import LayerHeadWeights, composition_scores
from attnscope.pipelines.qk.linear_maps import FrozenNorm
from attnscope.pipelines.qk.qk_attribution import qk_attribution
from attnscope.pipelines.qk.qk_view import HeadQK, qk_view

V, N, HALF = 8, 12, 6  # vocabulary, positions, length of the repeated block
TOK, POS, PREV = slice(0, V), slice(V, V + N), slice(V + N, 2 * V + N)
D_MODEL, D_HEAD = 2 * V + N, N
SHARP = 20.0


def _weights(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    f64 = torch.float64
    w_q = torch.zeros(2, D_MODEL, D_HEAD, dtype=f64)
    w_k = torch.zeros(2, D_MODEL, D_HEAD, dtype=f64)
    w_v = torch.zeros(2, D_MODEL, D_HEAD, dtype=f64)
    w_o = torch.zeros(2, D_HEAD, D_MODEL, dtype=f64)
    # L0H0, previous token: q_p . k_p' = SHARP [p == p' + 1]; OV copies the token into PREV
    for p in range(N):
        w_q[0, V + p, p] = SHARP
        if p + 1 < N:
            w_k[0, V + p, p + 1] = 1.0
    for t in range(V):
        w_v[0, t, t] = 1.0
        w_o[0, t, V + N + t] = 1.0
    # L0H1, a distractor: uniform attention, reads tokens, writes a random direction
    w_v[1, TOK, :V] = torch.eye(V, dtype=f64)
    w_o[1] = 0.5 * torch.randn(D_HEAD, D_MODEL, generator=g, dtype=f64)
    layer0 = LayerHeadWeights(w_q, w_k, w_v, w_o)
    # L1H0, induction: query reads the current token, key reads the previous-token subspace
    w_q1 = torch.zeros(1, D_MODEL, D_HEAD, dtype=f64)
    w_k1 = torch.zeros(1, D_MODEL, D_HEAD, dtype=f64)
    w_q1[0, TOK, :V] = SHARP * torch.eye(V, dtype=f64)
    w_k1[0, PREV, :V] = torch.eye(V, dtype=f64)
    w_v1 = torch.randn(1, D_MODEL, D_HEAD, generator=g, dtype=f64)
    w_o1 = torch.randn(1, D_HEAD, D_MODEL, generator=g, dtype=f64)
    layer1 = LayerHeadWeights(w_q1, w_k1, w_v1, w_o1)
    mlp = (
        0.1 * torch.randn(D_MODEL, 16, generator=g, dtype=f64),
        0.1 * torch.randn(16, D_MODEL, generator=g, dtype=f64),
    )
    return layer0, layer1, mlp


def _layer0_parts(tokens: list[int], layer0: LayerHeadWeights, mlp):
    """What the embedding, L0H0, L0H1 and MLP0 write at every position: ``[part, token, d_model]``
    (a plain causal attention layer in float64, no norm, scale 1, then an MLP on its output)."""
    x = torch.zeros(N, D_MODEL, dtype=torch.float64)
    for p, t in enumerate(tokens):
        x[p, t] = 1.0
        x[p, V + p] = 1.0
    mask = torch.ones(N, N).tril().bool()
    heads = []
    for h in range(2):
        scores = (x @ layer0.w_q[h]) @ (x @ layer0.w_k[h]).T
        w = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
        heads.append(w @ (x @ layer0.w_v[h]) @ layer0.w_o[h])
    mid = x + heads[0] + heads[1]
    mlp_out = torch.nn.functional.gelu(mid @ mlp[0]) @ mlp[1]
    return torch.stack([x, heads[0], heads[1], mlp_out]), ["emb", "L0H0", "L0H1", "MLP0"]


def test_attribution_names_the_planted_previous_token_head():
    layer0, layer1, mlp = _weights()
    block = [3, 1, 6, 0, 5, 2]
    tokens = block + block
    parts, labels = _layer0_parts(tokens, layer0, mlp)
    resid = parts.sum(0)
    norm = FrozenNorm(kind="rms", weight=None, eps=1e-6)
    head = HeadQK(w_q=layer1.w_q[0], b_q=None, w_k=layer1.w_k[0], b_k=None, kv_head=0, scale=1.0)
    for i in range(HALF + 1, N):  # second copy: t_i == t_{i - HALF}, so the key after it is i - HALF + 1
        j = i - HALF + 1
        view = qk_view(resid, head, i, j, norm=norm, causal=True)
        assert view.weight > 0.9  # the planted head does attend there
        att = qk_attribution(parts[:, i], parts[:, j], labels, head, i, j, norm=norm)
        assert abs(float(att.matrix.sum()) - view.score) < 1e-4
        assert att.top_key_part() == "L0H0"
        assert att.query_labels[int(att.query_totals.argmax())] == "emb"
        top = att.top_terms(1)[0]
        assert (top.query_part, top.key_part) == ("emb", "L0H0")
        assert float(att.key_totals[labels.index("L0H0")]) > 0.5 * view.score


def test_composition_finds_the_planted_k_composition():
    layer0, layer1, _ = _weights()
    comp = composition_scores([layer0, layer1], samples=16)
    k, q = comp.scores["k"], comp.scores["q"]
    # OV is the identity tok -> prev and W_QK^T the identity prev -> tok (times SHARP): the product is
    # the identity on V dims, |I_V| / (|I_V| |I_V|) = 1 / sqrt(V), the most two rank-V maps can reach
    assert float(k[0, 0, 1, 0]) == pytest.approx(V**-0.5, rel=1e-6)
    assert q[0, 0, 1, 0] < 1e-6  # the query reads tokens, L0H0 writes only the previous-token subspace
    mean, std = comp.baseline["k"]
    assert k[0, 0, 1, 0] > mean + 5 * std
    assert abs(float(k[0, 1, 1, 0]) - mean) < 4 * std  # the random distractor composes as random heads do
    assert torch.all(k[1] == 0) and torch.all(k[:, :, 0] == 0)  # only later layers are destinations


def test_a_norm_between_that_keeps_or_drops_the_planted_subspace():
    """Post-norm bookkeeping: the planted K-composition read through a gain that scales the previous-token
    dimensions keeps its score (scale-free), and through one that zeroes them it is gone."""
    layer0, layer1, _ = _weights()
    prev = torch.zeros(D_MODEL, dtype=torch.float64)
    prev[PREV] = 1.0  # the previous-token subspace L0H0 writes
    keep = torch.diag(1.0 + 2.0 * prev)
    drop = torch.diag(1.0 - prev)
    kept = composition_scores([layer0, layer1], samples=4, between=lambda a, b: keep).scores["k"]
    dropped = composition_scores([layer0, layer1], samples=4, between=lambda a, b: drop).scores["k"]
    assert float(kept[0, 0, 1, 0]) == pytest.approx(V**-0.5, rel=1e-6)
    assert float(dropped[0, 0, 1, 0]) < 1e-9
