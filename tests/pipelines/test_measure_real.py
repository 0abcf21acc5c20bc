"""Measure-theoretic claims on real MiniLM layers (and a tiny BERT where the answer is known)."""

import numpy as np
import pytest
import torch
from transformers import BertConfig

from attnscope.analysis.markov_kernel import head_outputs, push_forward
from attnscope.analysis.wasserstein import w1_uniform
from attnscope.models.capture import capture
from attnscope.models.interface import AttentionConfig
from attnscope.pipelines.layers import (
    AttentionSublayer,
    UnsupportedLayerError,
    extract_attention_params,
    layer_context,
    max_entropy_deviation,
    record_io,
)
from attnscope.pipelines.lipschitz import lipschitz_report
from attnscope.pipelines.shared_block import NoSharedBlockError, iterate_shared_block

TEXT = "The cat sat on the mat because it was tired of chasing the dog."


@pytest.fixture(scope="module")
def cap(minilm):
    return capture(minilm, TEXT)


def hook_count(model):
    """Hooks on every submodule (transformers registers some of its own: compare, don't expect 0)."""
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


@pytest.mark.parametrize("layer", range(6))
def test_kernel_formulation_equals_the_layers_own_attention_output(minilm, cap, layer):
    before = hook_count(minilm.model)
    x, ctx = layer_context(minilm, TEXT, layer)
    np.testing.assert_array_equal(x, cap.hidden_states[layer])  # the hook saw the captured input
    p = extract_attention_params(minilm, layer)
    mine = head_outputs(p, x).transpose(1, 0, 2).reshape(x.shape[0], -1)  # [token, H*d]
    assert np.abs(mine - ctx).max() < 1e-5  # float32 model against float64 kernel
    assert hook_count(minilm.model) == before


def test_the_hook_is_removed_even_when_the_forward_fails(minilm):
    sa = minilm.model.encoder.layer[0].attention.self
    before = hook_count(minilm.model)
    with pytest.raises(RuntimeError, match="boom"):
        with record_io(sa) as calls:
            assert hook_count(minilm.model) == before + 1
            raise RuntimeError("boom")
    assert calls == [] and hook_count(minilm.model) == before


@pytest.mark.parametrize("residual", [False, True])
def test_the_estimated_map_is_the_bounded_map(minilm, cap, residual):
    """The torch sublayer (real modules) and analysis.markov_kernel.push_forward agree to float64 rounding,
    so the bound (computed from the extracted weights) is about the map the estimate perturbs."""
    x = cap.hidden_states[3].astype(np.float64)
    phi = AttentionSublayer(minilm, 3, residual=residual)
    ref = push_forward(extract_attention_params(minilm, 3), x, residual=residual)
    assert np.abs(phi.numpy(x) - ref).max() < 1e-10


def test_max_entropy_rows_match_every_real_layer(minilm, cap):
    dev = max_entropy_deviation(minilm, cap)
    assert dev.shape == (6,) and dev.max() < 1e-5
    shifted = type(cap)(cap.maps, cap.output, np.roll(cap.hidden_states, 1, axis=0))  # wrong layer inputs
    assert max_entropy_deviation(minilm, shifted).min() > 1e-2


@pytest.mark.parametrize("layer", [0, 2, 5])
def test_the_estimate_never_exceeds_the_derived_bound(minilm, cap, layer):
    r = lipschitz_report(
        minilm, layer, cap.hidden_states[layer], eps=(1e-2, 0.3), n_draws=2, ascent_eps=(1e-1,), ascent_steps=12
    )
    assert r.radius == pytest.approx(np.linalg.norm(cap.hidden_states[layer], axis=1).max(), rel=1e-6)
    assert 1.0 < r.estimate and np.log10(r.estimate) <= r.bound.log10_bound
    assert r.best_ascent >= r.best_random  # the ascent improves on random directions here
    assert r.log10_ratio < 0 and r.bound.log10_bound > r.bound.log10_bound_without_bias


def tiny_model(uniform: bool, seed=0):
    """A one-layer BERT (eager attention, no dropout); with ``uniform`` its queries and keys are zero."""
    from transformers import BertModel

    cfg = BertConfig(
        hidden_size=8,
        num_attention_heads=2,
        intermediate_size=16,
        num_hidden_layers=1,
        attn_implementation="eager",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(seed)
    model = BertModel(cfg).eval()
    if uniform:
        att = model.encoder.layer[0].attention.self
        for lin in (att.query, att.key):
            torch.nn.init.zeros_(lin.weight)
            torch.nn.init.zeros_(lin.bias)
    return model


class FakeLoaded:
    """Just enough of a backend: a one-layer BERT with its ``Sites`` (and maybe as a shared block
    applied three times, through the ``Sites`` contract: ``shared`` and ``shared_state``)."""

    def __init__(self, model, shared=False):
        from dataclasses import replace

        from attnscope.models.site_table import build_sites

        self.spec = type("Spec", (), {"name": "tiny"})()
        self.model = model
        self.n_layers = 3
        sites = build_sites(model, "bert")
        if shared:
            sites = replace(
                sites,
                n_layers=3,
                blocks=sites.blocks * 3,
                shared=True,
                shared_state=lambda x0: {"attention_mask": None},
            )
        self.sites = sites
        self.attention = AttentionConfig(n_layers=sites.n_layers, n_heads=model.config.num_attention_heads)


def test_gradient_ascent_reaches_the_bound_where_it_is_tight():
    """Uniform attention (W_Q = W_K = 0, no biases reaching the softmax): L = sum_h ||W_O^h W_V^h||
    for one head; with two heads the sum is an upper bound and ||W_O W_V|| (all heads) is reached."""
    loaded = FakeLoaded(tiny_model(uniform=True))
    x = np.random.default_rng(0).standard_normal((6, 8))
    r = lipschitz_report(loaded, 0, x, eps=(1e-2,), n_draws=2, ascent_eps=(1e-1,), ascent_steps=40)
    p = extract_attention_params(loaded, 0)
    exact = np.linalg.norm(p.value_out.sum(0), 2)  # Phi(mu) = delta at (sum_h W_h) mean + const
    assert r.estimate <= 10**r.bound.log10_bound * (1 + 1e-9)
    assert r.estimate == pytest.approx(exact, rel=2e-2)


def test_unsupported_and_out_of_range_layers_are_refused(minilm):
    with pytest.raises(IndexError, match="0..5"):
        extract_attention_params(minilm, 6)
    from attnscope.models.site_table import build_sites

    class NotBert:  # a model whose family has no Sites entry, as a backend reports it
        spec = type("Spec", (), {"name": "linear"})()

        @property
        def sites(self):
            return build_sites(torch.nn.Linear(2, 2), "linear")

    not_bert = NotBert()
    with pytest.raises(UnsupportedLayerError, match="BERT-like"):
        extract_attention_params(not_bert, 0)


def test_iterating_a_minilm_layer_starts_with_the_models_own_next_layer(minilm, cap):
    it = iterate_shared_block(minilm, TEXT, 6, layer=2)
    assert it.demonstration and it.start_depth == 2 and "demonstration" in it.label
    assert it.result.w1_steps.shape == (6,)
    first = w1_uniform(cap.hidden_states[2], cap.hidden_states[3])
    assert it.result.w1_steps[0] == pytest.approx(first, rel=1e-4)  # step 1 == the trained forward
    assert it.log10_bound_attention > 0 and it.attention_contraction is False
    with pytest.raises(NoSharedBlockError, match="layer"):
        iterate_shared_block(minilm, TEXT, 3)


def test_a_model_with_a_shared_block_is_iterated_through_the_contract():
    model = tiny_model(uniform=False)
    layer = model.encoder.layer[0]
    loaded = FakeLoaded(model, shared=True)
    x0 = np.random.default_rng(1).standard_normal((5, 8))
    it = iterate_shared_block(loaded, x0, 4)
    assert not it.demonstration and it.trained_depth == 3 and it.start_depth == 0
    with torch.no_grad():
        y1 = layer.double()(torch.as_tensor(x0)[None])[0].numpy()
    assert it.result.w1_steps[0] == pytest.approx(w1_uniform(x0, y1), rel=1e-9)
    assert it.log10_bound_attention is None
    assert it.block_contraction is None  # not the zoo's pre-LN block: the fixed-key bound does not apply
