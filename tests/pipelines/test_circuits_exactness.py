"""EAP against exact patching where the answer is known in closed form, on tiny float64 GPT-2s built
here: on a model that is linear downstream of a receiver, EAP (the first-order term) equals exact
patching of every edge into it; denoising equals noising of the swapped pair, and its EAP is the
derivative of denoising patching; a batch scored in row chunks equals the mean of its pairs'
scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, GPT2Config

from attnscope.models import attention_fn
from attnscope.models.session import attach
from attnscope.pipelines.circuits import attribution
from attnscope.pipelines.circuits.attribution import eap
from attnscope.pipelines.circuits.metric import CircuitMetric
from attnscope.pipelines.circuits.patching import fixed_delta, patch_edge, prepare
from attnscope.pipelines.circuits.stream import run_graph
from tests.pipelines.test_circuits_tiny import METRIC, V, _model, _pair

EPS = 1e12  # a LayerNorm's eps far above var(x): x / sqrt(var + eps) is x / sqrt(eps) to ~1e-12


def _linear_downstream(seed: int = 0):
    """A GPT-2 (float64) whose LayerNorms are linear (eps 1e12, weights scaled by 1e6 to keep their
    scale) and whose last MLP writes nothing: from a last-layer value input, or the logits' input, to
    the logit difference every step is linear (the attention weights come from the q/k inputs, which
    the patch leaves alone)."""
    attention_fn.register()
    cfg = GPT2Config(vocab_size=V, n_positions=64, n_embd=32, n_layer=2, n_head=4, layer_norm_epsilon=EPS)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attention_fn.NAME).eval().double()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.mul_(EPS**0.5)
        model.transformer.h[-1].mlp.c_proj.weight.zero_()
    return model, attach(model, "gpt2")


def test_eap_equals_exact_patching_where_the_model_is_linear():
    model, sites = _linear_downstream()
    p = prepare(model, sites, *_pair(3), METRIC)
    g, scores = p.graph, eap(p)
    last = g.n_layers - 1
    linear = [g.receiver(last, "v", h) for h in range(g.n_kv)] + [g.receiver(0, "logits")]
    checked = 0
    for r in linear:
        for s in np.nonzero(g.valid()[:, r])[0]:
            exact = patch_edge(p, int(s), r)
            assert scores[s, r] == pytest.approx(exact, rel=1e-7, abs=1e-10), (s, r)
            checked += 1
    assert checked > 20 and np.nanmax(np.abs(scores[:, linear])) > 1e-3  # real effects, not zeros
    # the same edges of the ordinary model (its final LayerNorm is not linear): first order misses
    model, sites = _model("gpt2")
    o = prepare(model, sites, *_pair(3), METRIC)
    r, so = o.graph.receiver(0, "logits"), eap(o)
    exact = [patch_edge(o, int(s), r) for s in range(o.graph.n_senders)]
    gaps = [abs(so[s, r] - x) for s, x in enumerate(exact)]
    assert max(gaps) > 1e-3 * max(map(abs, exact))


def test_denoising_is_noising_of_the_swapped_pair_and_eap_is_its_derivative():
    """Denoising an edge (the corrupted pass, the edge given its clean value) is noising the edge of
    the pair with clean and corrupted swapped (the logit difference reads no input ids): two
    computations from two prepared pairs. Its EAP score is the derivative of that patch."""
    model, sites = _model("gpt2")
    clean, corr = _pair(6)
    p, swapped = prepare(model, sites, clean, corr, METRIC), prepare(model, sites, corr, clean, METRIC)
    g = p.graph
    edges = [
        (0, g.receiver(1, "k", 2)),
        (g.head_sender(0, 3), g.receiver(1, "q", 0)),
        (g.mlp_sender(1), g.n_receivers - 1),
    ]
    den, den_swapped = eap(p, "denoising"), eap(swapped)
    np.testing.assert_allclose(den, den_swapped, rtol=1e-10, atol=1e-12)
    eps = 1e-5
    for s, r in edges:
        effect = patch_edge(p, s, r, "denoising")
        assert effect == pytest.approx(patch_edge(swapped, s, r), abs=1e-12)
        assert abs(effect) > 1e-6
        delta = p.clean.senders[s] - p.corrupted.senders[s]
        ms = []
        for sign in (1, -1):
            with torch.no_grad():
                out, _ = run_graph(model, sites, p.corrupted_ids, fixed_delta(g, r, sign * eps * delta), p.params)
            ms.append(float(p.metric(out.logits, p.clean_ids)))
        assert den[s, r] == pytest.approx((ms[0] - ms[1]) / (2 * eps), rel=1e-5, abs=1e-10)


@pytest.mark.parametrize("metric", [METRIC, CircuitMetric("loss")])
def test_a_batch_scored_in_row_chunks_is_the_mean_of_its_pairs(monkeypatch, metric):
    """Three pairs in one batch, scored a row at a time and all at once: both equal the mean of the
    pairs' own scores (the metric is the mean over rows)."""
    model, sites = _model("gpt2")
    pairs = [_pair(20 + i) for i in range(3)]
    clean, corr = torch.cat([c for c, _ in pairs]), torch.cat([k for _, k in pairs])
    answers = ((3, 7), (1, 2), (5, 9))
    m = metric if metric.kind == "loss" else CircuitMetric("answer_logit_diff", answers=answers)
    own = []
    for i, (c, k) in enumerate(pairs):
        mi = m if m.kind == "loss" else CircuitMetric("answer_logit_diff", answers=(answers[i],))
        own.append(eap(prepare(model, sites, c, k, mi)))
    batch = prepare(model, sites, clean, corr, m)
    monkeypatch.setattr(attribution, "CHUNK_TOKENS", clean.shape[1])  # one row per backward pass
    assert attribution.chunk_rows(3, clean.shape[1]) == 1
    chunked = eap(batch)
    monkeypatch.setattr(attribution, "CHUNK_TOKENS", 10_000)
    whole = eap(batch)
    np.testing.assert_allclose(chunked, whole, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(chunked, np.mean(own, axis=0), rtol=1e-8, atol=1e-12)
