"""The QK view and attribution on real models through their ``Sites``: the terms sum to the model's
own score (SmolLM2: causal, RoPE, grouped-query; MiniLM: post-norm encoder; a zoo model), the query and
key vectors equal those ``attnscope_qk`` recorded for the lazy maps, the weight equals the model's map,
knocking out the top key-side head with the interventions API lowers the score, and bad requests are
refused naming the range or the missing part."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.analysis.heads import induction_scores
from attnscope.models.sites import SiteOutOfRangeError, SitesUnavailableError
from attnscope.pipelines.induction_probe import probe_ids
from attnscope.pipelines.interventions.edits import EditContext, build_edits
from attnscope.pipelines.interventions.spec import HeadAblation, InterventionSet
from attnscope.pipelines.qk.explain import check_request, explain_pair, sites_composition
from tests.conftest import recorded_qk

TEXT = "The capital of France is Paris, and the cat sat on the mat. The cat"


def _recorded_score(backend, source, layer, head, i, j):
    """The score from the model's own recorded float32 query and key."""
    rec = source.layers[layer]
    kv = backend.sites.kv_head_of(head)
    q, k = rec.query[head, i].float(), rec.key[kv, j].float()
    return float(q @ k) * rec.scale, q, k


def _check_against_lazy_maps(backend, inp, pairs):
    cap = backend.run(inp, hidden_states=False)
    source = recorded_qk(backend, inp)
    worst = 0.0
    for layer, head, i, j in pairs:
        ex = explain_pair(backend, inp, layer, head, i, j)
        score, q, k = _recorded_score(backend, source, layer, head, i, j)
        total = float(ex.attribution.matrix.sum())
        tol = 1e-4 * max(1.0, abs(score))
        assert abs(total - score) <= tol, (layer, head, total, score)
        assert abs(ex.view.score - score) <= tol
        assert ex.model_score is not None and abs(total - ex.model_score) <= tol  # the layer's own logit
        assert torch.allclose(ex.view.query, q, atol=1e-4, rtol=1e-4)
        assert torch.allclose(ex.view.key, k, atol=1e-4, rtol=1e-4)
        assert ex.view.weight == pytest.approx(float(cap.maps.layer(layer)[head, i, j]), abs=1e-5)
        assert ex.attribution.residual_error < 1e-3
        worst = max(worst, abs(total - score))
    return worst


def test_smollm2_terms_sum_to_its_recorded_score(smollm2):
    inp = smollm2.encode_text(TEXT)
    n = len(inp)
    pairs = [(0, 4, n - 1, 0), (18, 0, 12, 5), (29, 8, n - 1, n - 1)]  # head 8 reads key head 2 of 3
    _check_against_lazy_maps(smollm2, inp, pairs)
    ex = explain_pair(smollm2, inp, 18, 0, 12, 5)
    labels = ex.attribution.key_labels
    assert labels[0] == "emb" and "L17H8" in labels and "MLP17" in labels and "L18H0" not in labels
    assert ex.attribution.matrix.shape == (len(ex.attribution.query_labels), len(labels))


def test_minilm_post_norm_terms_sum_to_its_recorded_score(minilm):
    inp = minilm.encode_text(TEXT)
    n = len(inp)
    _check_against_lazy_maps(minilm, inp, [(0, 3, 2, n - 1), (5, 11, n - 1, 1)])
    ex = explain_pair(minilm, inp, 5, 11, n - 1, 1)
    assert "norm bias" in ex.attribution.key_labels and "q bias" in ex.attribution.query_labels


def test_zoo_terms_sum_to_the_score_of_its_maps():
    from attnscope.models.loading import load_model

    backend = load_model("text-vanilla", device="cpu")
    inp = backend.encode_text("a gripping , funny and moving film")
    maps = backend.run(inp, hidden_states=False).maps
    for layer, head in [(0, 1), (1, 3)]:
        ex = explain_pair(backend, inp, layer, head, 2, 5)
        assert ex.attribution.conservation_error < 1e-6 and ex.attribution.residual_error < 1e-4
        assert ex.view.weight == pytest.approx(float(maps.layer(layer)[head, 2, 5]), abs=1e-5)


def test_an_ablation_reaches_a_zoo_models_attribution():
    """The zoo's attention applies the session's edit hooks: zero-ablating L0H1 of a zoo model changes
    the layer-1 score, the ablated terms still sum to the model's own (ablated) logit and the weight is
    the ablated run's map; ablating a head of layer 1 itself (its output, after the scores) does not."""
    from attnscope.models.loading import load_model
    from attnscope.models.session import session

    backend = load_model("text-vanilla", device="cpu")
    inp = backend.encode_text("a gripping , funny and moving film")
    ctx = EditContext(n_heads=backend.n_heads, head_dim=backend.sites.d_head, n_tokens=len(inp))

    def ablate(layer, head):
        return build_edits([InterventionSet((HeadAblation(((layer, head),), "zero"),))], ctx)

    clean = explain_pair(backend, inp, 1, 3, 2, 5)
    edited = explain_pair(backend, inp, 1, 3, 2, 5, hooks=[ablate(0, 1)])
    assert abs(edited.view.score - clean.view.score) > 1e-3
    assert edited.model_score is not None and abs(float(edited.attribution.matrix.sum()) - edited.model_score) < 1e-4
    totals = dict(zip(edited.attribution.key_labels, edited.attribution.key_totals))
    assert abs(float(totals["L0H1"])) < 1e-9  # the ablated head wrote nothing
    with torch.inference_mode(), session(hooks=[ablate(0, 1)]):
        maps = backend.run(inp, hidden_states=False).maps
    assert edited.view.weight == pytest.approx(float(maps.layer(1)[3, 2, 5]), abs=1e-5)
    same = explain_pair(backend, inp, 1, 3, 2, 5, hooks=[ablate(1, 0)])
    assert same.view.score == pytest.approx(clean.view.score, abs=1e-6)


@pytest.mark.slow
def test_knocking_out_the_top_key_side_head_lowers_an_induction_score(smollm2):
    """On repeated random tokens, the strongest induction head's score at the second copy is split;
    zero-ablating (interventions API) the earlier head with the largest key-side share lowers it."""
    half = 20
    ids = probe_ids(smollm2, 2 * half, seed=0)
    inp = smollm2.encode_ids(ids)
    scores = induction_scores(smollm2.run(inp, hidden_states=False).maps, ids)
    layer, head = (int(v) for v in np.unravel_index(int(np.argmax(scores)), scores.shape))
    b = len(ids) - 2 * half
    i = b + half + 10  # a second-copy token; its earlier copy is at i - half, the key after it at i - half + 1
    j = i - half + 1
    ex = explain_pair(smollm2, inp, layer, head, i, j)
    att = ex.attribution
    heads = [(c, float(v)) for c, v in zip(att.key_labels, att.key_totals) if c.startswith("L")]
    top = max(heads, key=lambda cv: cv[1])[0]
    assert dict(heads)[top] > 0
    m, h = (int(x) for x in top[1:].split("H"))
    edits = build_edits(
        [InterventionSet((HeadAblation(((m, h),), "zero"),))],
        EditContext(n_heads=smollm2.n_heads, head_dim=smollm2.sites.d_head, n_tokens=len(inp)),
    )
    ablated = explain_pair(smollm2, inp, layer, head, i, j, hooks=[edits])
    assert ablated.view.score < ex.view.score


def test_bad_requests_name_the_range_or_the_missing_part(smollm2, minilm):
    inp = smollm2.encode_text("one two three")
    n = len(inp)
    with pytest.raises(ValueError, match="after query"):
        explain_pair(smollm2, inp, 3, 0, 1, 2)
    with pytest.raises(ValueError, match=rf"0\.\.{n - 1}"):
        explain_pair(smollm2, inp, 3, 0, n, 0)
    with pytest.raises(SiteOutOfRangeError, match="0..29"):
        explain_pair(smollm2, inp, 30, 0, 1, 0)
    with pytest.raises(SiteOutOfRangeError, match="0..8"):
        explain_pair(smollm2, inp, 3, 9, 1, 0)
    explain_pair(minilm, minilm.encode_text("one two three"), 0, 0, 1, 3)  # an encoder: any key
    from attnscope.models.loading import load_model

    positional = load_model("gauss9-iso", device="cpu")  # content-free Gaussian heads: no W_Q/W_K
    with pytest.raises(SitesUnavailableError, match="W_Q"):
        check_request(positional, 4, 0, 0, 1, 0)
    no_entry = load_model("san-pairwise", device="cpu")  # its attention has no Sites entry
    with pytest.raises(SitesUnavailableError, match="zoo-san"):
        check_request(no_entry, 4, 0, 0, 1, 0)


def test_smollm2_composition_from_its_sites(smollm2):
    comp = sites_composition(smollm2, samples=8)
    s = comp.scores["k"]
    assert s.shape == (30, 9, 30, 9) and float(s[:, :, 0].abs().max()) == 0.0
    mean, std = comp.baseline["k"]
    assert mean == pytest.approx(576**-0.5, rel=0.05)
    assert float(s.max()) > mean + 10 * std  # some heads compose far above random


def test_composition_cache_keeps_one_result_per_model_and_mode():
    from attnscope.models.loading import load_model
    from attnscope.pipelines.qk.explain import CompositionCache

    backend = load_model("text-vanilla", device="cpu")
    cache = CompositionCache(max_entries=2)
    k = cache.get(backend, "k")
    assert cache.get(backend, "k") is k and set(k.scores) == {"k"}
    v = cache.get(backend, "v")
    cache.get(backend, "q")  # the third entry evicts the least recently used ("k")
    assert cache.get(backend, "v") is v and cache.get(backend, "k") is not k
    assert torch.equal(cache.get(backend, "k").scores["k"], k.scores["k"])


def test_minilm_post_norm_composition_equals_full_products_from_its_modules(minilm):
    """Post-norm: what a head of layer a writes reaches layer b through the LayerNorms of blocks a..b-1
    (``C diag(gamma)`` each, divisors dropped); checked against the full ``[d_model, d_model]`` matrices
    built here from the BERT modules themselves, not from ``Sites``."""
    comp = sites_composition(minilm, samples=4)
    layers = minilm.model.base_model.encoder.layer
    d, dh = 384, 32
    centre = torch.eye(d, dtype=torch.float64) - 1.0 / d

    def ln(module):
        return centre @ torch.diag(module.weight.detach().double())

    def rows(lin, h):  # the head's slice of an nn.Linear as a [d_model, d_head] row-convention map
        return lin.weight.detach().double()[h * dh : (h + 1) * dh].T

    fro = torch.linalg.matrix_norm
    for a, src, b, dst in [(0, 3, 1, 5), (1, 0, 4, 11), (2, 7, 3, 2)]:
        path = torch.eye(d, dtype=torch.float64)
        for k in range(a, b):
            path = path @ ln(layers[k].attention.output.LayerNorm) @ ln(layers[k].output.LayerNorm)
        sa, sb = layers[a].attention, layers[b].attention
        w_o = sa.output.dense.weight.detach().double()[:, src * dh : (src + 1) * dh].T  # [d_head, d_model]
        ov = rows(sa.self.value, src) @ w_o @ path
        qk = rows(sb.self.query, dst) @ rows(sb.self.key, dst).T
        w_o_b = sb.output.dense.weight.detach().double()[:, dst * dh : (dst + 1) * dh].T
        ov_b = rows(sb.self.value, dst) @ w_o_b
        for mode, right in (("q", qk), ("k", qk.T), ("v", ov_b)):
            ref = float(fro(ov @ right) / fro(ov) / fro(right))
            assert float(comp.scores[mode][a, src, b, dst]) == pytest.approx(ref, rel=1e-4)
    assert float(comp.scores["k"].max()) > comp.baseline["k"][0] + 10 * comp.baseline["k"][1]
