"""The contribution graph (Ferrando and Voita 2024) on the tiny pre-norm decoder: the importance's
closed forms, the exact decomposition it rests on, and at threshold 0 every edge of the full
decomposition computed by brute force."""

from __future__ import annotations

import pytest
import torch
from tiny_prenorm import TinyParams, forward

from attnscope.pipelines.writes.graph import (
    BlockInputs,
    GraphTooLargeError,
    attention_terms,
    contribution_graph,
    importances,
    node_importances,
    written,
)

IDS = torch.tensor([3, 1, 4, 1, 5, 9])


def test_importance_closed_forms():
    y = torch.tensor([1.0, -2.0, 0.5])
    assert importances(y, torch.stack([y, torch.zeros(3)])).tolist() == [1.0, 0.0]
    assert importances(y, torch.stack([y / 2, y / 2])).tolist() == [0.5, 0.5]
    opposite = importances(y, torch.stack([2 * y, -y]))  # ||y - 2y|| = ||y||: proximity 0 for both
    assert opposite.tolist() == [0.0, 0.0]
    # ||y||_1 = 3.5; z1 = y + e (||y - z1|| = 1): 2.5; z2 = -e: ||y + e|| = 3.5 + ... -> 0
    e = torch.tensor([1.0, 0.0, 0.0])
    imp = importances(y, torch.stack([y - e, e]))
    assert imp[0] > imp[1] and float(imp.sum()) == pytest.approx(1.0)


def inputs(p: TinyParams, rec: dict) -> list[BlockInputs]:
    return [
        BlockInputs(
            pre=rec["resid"][layer],
            mlp=rec["mlp"][layer],
            W_O=p.w[layer]["W_O"],
            b_O=p.w[layer]["b_O"],
            probs=lambda i, layer=layer: rec["probs"][layer][:, i, : i + 1],
            values=lambda layer=layer: rec["values"][layer],
        )
        for layer in range(p.n_layers)
    ]


def test_the_attention_terms_sum_to_the_stream_after_attention():
    p = TinyParams(seed=11)
    rec = forward(p, IDS)
    blocks = inputs(p, rec)
    for layer, blk in enumerate(blocks):
        for i in range(len(IDS)):
            mid = rec["resid"][layer + 1][i] - rec["mlp"][layer][i]
            terms = attention_terms(blk, i, blk.values())  # [head, key, d]
            torch.testing.assert_close(blk.pre[i] + terms.sum((0, 1)) + blk.b_O, mid, atol=1e-5, rtol=1e-5)


def brute_force(p: TinyParams, rec: dict) -> dict:
    """Every edge weight of every position at every layer, computed without the graph."""
    out = {}
    blocks = inputs(p, rec)
    for layer, blk in enumerate(blocks):
        post = rec["resid"][layer + 1]
        for i in range(len(IDS)):
            mid = post[i] - blk.mlp[i]
            w = importances(post[i], torch.stack([mid, blk.mlp[i]]))
            out[(("mid", layer, i), ("pre", layer + 1, i), "residual")] = float(w[0])
            out[(("mid", layer, i), ("pre", layer + 1, i), "mlp")] = float(w[1])
            src = attention_terms(blk, i, blk.values()).sum(0)
            imp = importances(mid, torch.cat([blk.pre[i][None], src, blk.b_O[None]]))
            out[(("pre", layer, i), ("mid", layer, i), "residual")] = float(imp[0])
            for j in range(i + 1):
                out[(("pre", layer, j), ("mid", layer, i), "attention")] = float(imp[1 + j])
    return out


def test_threshold_zero_holds_every_edge_of_the_full_decomposition():
    p = TinyParams(seed=12)
    rec = forward(p, IDS)
    target = len(IDS) - 1
    g = contribution_graph(inputs(p, rec), rec["resid"][-1], target, threshold=0.0)
    full = brute_force(p, rec)
    # reachable from the target at the top: the last layer's MLP/residual at the target only, then all
    # positions <= target below the first attention step
    want = {k: v for k, v in full.items() if k[0][1] < p.n_layers - 1 or k[1][2] == target}
    got = {(s, t, kind): w for s, t, kind, w in g.edges}
    assert got.keys() == want.keys()
    for key, w in want.items():
        assert got[key] == pytest.approx(w, abs=1e-6), key
    assert len(g.nodes) == 2 + len(IDS) * (2 * p.n_layers - 1)  # the target on top and after its last attention


def test_a_higher_threshold_keeps_a_subgraph_and_bounds_are_refused():
    p = TinyParams(seed=13)
    rec = forward(p, IDS)
    blocks, final = inputs(p, rec), rec["resid"][-1]
    small = contribution_graph(blocks, final, 5, threshold=0.2)
    large = contribution_graph(blocks, final, 5, threshold=0.05)
    assert small.nodes <= large.nodes and all(w >= 0.2 for *_, w in small.edges)
    assert {(s, t, k) for s, t, k, _ in small.edges} <= {(s, t, k) for s, t, k, _ in large.edges}
    with pytest.raises(GraphTooLargeError, match="passed 5 nodes"):
        contribution_graph(blocks, final, 5, threshold=0.0, max_nodes=5)
    with pytest.raises(ValueError, match="outside"):
        contribution_graph(blocks, final, 5, threshold=1.5)


def _exact(y: torch.Tensor, parts: torch.Tensor) -> torch.Tensor:
    """The normalised proximities in float64: the reference both float32 paths are held to."""
    y, parts = y.double(), parts.double()
    prox = (y.abs().sum() - (y - parts).abs().sum(-1)).clamp_min(0.0)
    return prox / prox.sum() if prox.sum() > 0 else prox


def test_chunked_node_importances_equal_the_dense_terms_and_so_do_the_graphs():
    """A node's importances from the layer's shared ``u = v W_O`` (the linear form plus the overshoot of
    the few terms that can pass the stream, ``key_chunk`` at a time; the direct distances where the
    stream has a zero coordinate) equal those of its dense ``[head, key, d_model]`` terms in float64
    (source edges and per-head shares), and the graph does not depend on the chunk."""
    p = TinyParams(seed=14)
    rec = forward(p, IDS)
    blocks = inputs(p, rec)
    for layer, blk in enumerate(blocks):
        u = written(blk.values(), blk.W_O, len(IDS))
        for i in range(len(IDS)):
            mid = rec["resid"][layer + 1][i] - blk.mlp[i]
            terms = attention_terms(blk, i, blk.values())  # [head, key, d]
            for y in (mid, torch.where(torch.arange(mid.numel()) == 3, 0.0, mid)):  # a zero coordinate
                want = _exact(y, torch.cat([blk.pre[i][None], terms.sum(0), blk.b_O[None]]))
                want_heads = _exact(y, terms)
                for chunk in (1, 2, 512):
                    imp, heads = node_importances(y, blk.pre[i], blk.b_O, blk.probs(i), u, key_chunk=chunk)
                    torch.testing.assert_close(imp.double(), want, atol=1e-6, rtol=0)
                    torch.testing.assert_close(heads.double(), want_heads, atol=2e-6, rtol=0)
    final = rec["resid"][-1]
    dense = contribution_graph(blocks, final, 5, threshold=0.0, key_chunk=10**6)
    for chunk in (1, 3):
        g = contribution_graph(blocks, final, 5, threshold=0.0, key_chunk=chunk)
        assert [e[:3] for e in g.edges] == [e[:3] for e in dense.edges]
        assert [e[3] for e in g.edges] == pytest.approx([e[3] for e in dense.edges], abs=1e-6)
        for key, shares in dense.heads.items():
            assert g.heads[key] == pytest.approx(shares, abs=1e-6)
