"""Composition scores (Elhage et al. 2021) on random grouped-query weights: the factored computation
equals the full ``[d_model, d_model]`` products; norms fold in as their matrices; the random baseline
does not depend on the weights' scale and sits near its closed-form size."""

from __future__ import annotations

import math

import pytest
import torch

from attnscope.pipelines.qk.composition import LayerHeadWeights, composition_scores, direct_score, random_baseline

D_MODEL, D_HEAD, HEADS, KV = 32, 8, 4, 2


def _layer(g, gain=True, centres=False):
    def draw(*shape):
        return torch.randn(*shape, generator=g)

    return LayerHeadWeights(
        w_q=draw(HEADS, D_MODEL, D_HEAD),
        w_k=draw(KV, D_MODEL, D_HEAD),
        w_v=draw(KV, D_MODEL, D_HEAD),
        w_o=draw(HEADS, D_HEAD, D_MODEL),
        reader_gain=1 + 0.5 * draw(D_MODEL) if gain else None,
        reader_centres=centres,
    )


@pytest.mark.parametrize("centres", [False, True])
def test_factored_scores_equal_full_products(centres):
    g = torch.Generator().manual_seed(0)
    layers = [_layer(g, centres=centres) for _ in range(3)]
    comp = composition_scores(layers, samples=4)
    for mode in ("q", "k", "v"):
        s = comp.scores[mode]
        for a, b in [(0, 1), (0, 2), (1, 2)]:
            for src in range(HEADS):
                for dst in range(HEADS):
                    ref = direct_score(layers[a], src, layers[b], dst, mode)
                    assert float(s[a, src, b, dst]) == pytest.approx(ref, rel=1e-5)
        assert torch.all(s[2] == 0) and torch.all(s[1, :, :2] == 0)
        assert float(s.max()) <= 1.0


def test_reading_folds_the_norm_as_its_matrix():
    g = torch.Generator().manual_seed(1)
    lay = _layer(g, centres=True)
    centre = torch.eye(D_MODEL, dtype=torch.float64) - 1.0 / D_MODEL
    ref = centre @ torch.diag(lay.reader_gain.double()) @ lay.w_q[2].double()
    assert torch.allclose(lay.reading(lay.w_q)[2], ref)


def test_grouped_query_heads_share_their_key_head():
    """Query heads 0 and 1 read key head 0: with equal W_Q they get equal K-scores from every source."""
    g = torch.Generator().manual_seed(2)
    a, b = _layer(g), _layer(g)
    b = LayerHeadWeights(b.w_q[[0, 0, 2, 3]], b.w_k, b.w_v, b.w_o, b.reader_gain)
    k = composition_scores([a, b], samples=2).scores["k"]
    assert torch.allclose(k[0, :, 1, 0], k[0, :, 1, 1])
    assert not torch.allclose(k[0, :, 1, 0], k[0, :, 1, 2])


def test_baseline_is_scale_free_and_near_its_size():
    """For independent Gaussian factors the score concentrates near ``1 / sqrt(d_model)`` (for random
    ``A, B``, ``E|A B|^2 = |A|^2 |B|^2 / d_model``); scaling the weights changes no score."""
    base = random_baseline(64, 8, samples=64, seed=0)
    for mean, std in base.values():
        assert mean == pytest.approx(64**-0.5, rel=0.1) and 0 < std < 0.2 * mean
    g = torch.Generator().manual_seed(3)
    layers = [_layer(g, gain=False) for _ in range(2)]
    scaled = [LayerHeadWeights(3 * lay.w_q, 0.5 * lay.w_k, 7 * lay.w_v, 2 * lay.w_o) for lay in layers]
    one, two = composition_scores(layers, samples=2), composition_scores(scaled, samples=2)
    for mode in ("q", "k", "v"):
        assert torch.allclose(one.scores[mode], two.scores[mode])
    assert base["k"][0] == pytest.approx(random_baseline(64, 8, samples=64, seed=0)["k"][0])
    assert math.isfinite(base["q"][0])


def test_a_map_between_writer_and_reader_is_honoured_and_scale_free():
    """Post-norm: what layer a writes reaches layer b through ``between(a, b)``; the factored scores equal
    the full products through it, and scaling the map (a dropped norm divisor) changes nothing."""
    g = torch.Generator().manual_seed(4)
    layers = [_layer(g, gain=False) for _ in range(3)]
    maps = {(a, b): torch.randn(D_MODEL, D_MODEL, generator=g, dtype=torch.float64) for a in range(3) for b in range(3)}
    comp = composition_scores(layers, samples=2, between=lambda a, b: maps[a, b])
    scaled = composition_scores(layers, samples=2, between=lambda a, b: 5.0 * maps[a, b])
    for mode in ("q", "k", "v"):
        s = comp.scores[mode]
        assert torch.allclose(s, scaled.scores[mode])
        for a, b in [(0, 1), (0, 2), (1, 2)]:
            for src, dst in [(0, 0), (1, 3), (3, 2)]:
                ref = direct_score(layers[a], src, layers[b], dst, mode, between=maps[a, b])
                assert float(s[a, src, b, dst]) == pytest.approx(ref, rel=1e-6)
        assert torch.all(s[2] == 0) and torch.all(s[1, :, :2] == 0)
