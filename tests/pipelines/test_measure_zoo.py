"""The measure-theoretic layer analyses on the zoo's plain content-attention transformers (pre-LN:
the attention reads LN1 of the hidden states), and the reasons other zoo layers are refused."""

import copy

import numpy as np
import pytest
import torch

from attnscope.analysis.markov_kernel import push_forward
from attnscope.analysis.wasserstein import w1_uniform
from attnscope.models.capture import capture, capture_image
from attnscope.models.loading import load_model
from attnscope.models.zoo import data, samples
from attnscope.models.zoo.manifest import read_manifest
from attnscope.pipelines.layers import (
    AttentionSublayer,
    UnsupportedLayerError,
    encoder_layers,
    extract_attention_params,
    layer_input,
    max_entropy_deviation,
)
from attnscope.pipelines.lipschitz import lipschitz_report
from attnscope.pipelines.shared_block import iterate_shared_block

pytestmark = pytest.mark.skipif(read_manifest("vit") is None, reason="zoo not trained")


@pytest.fixture(scope="module")
def vanilla():
    loaded = load_model("text-vanilla", device="cpu")
    return loaded, capture(loaded, "a gripping , funny and deeply moving film")


@pytest.fixture(scope="module")
def vit():
    if not data.available():
        pytest.skip("data folder not found; set ATTNSCOPE_DATA_DIR")
    loaded = load_model("vit", device="cpu")
    image, _ = samples.sample("mnist", 5)
    return loaded, capture_image(loaded, loaded.prepare_image(image))


@pytest.mark.parametrize("which", ["vanilla", "vit"])
def test_the_kernel_formulation_is_the_zoo_layers_own_output(which, request):
    loaded, cap = request.getfixturevalue(which)
    for layer in range(loaded.n_layers):
        u = layer_input(loaded, cap.hidden_states, layer)
        block = encoder_layers(loaded)[layer].block  # the model's own module (BlockSites.block)
        with torch.no_grad():  # the model's own LN1 and attention, in its own float32
            ref_u = block.ln1(torch.as_tensor(cap.hidden_states[layer]))
            out = block.attn(ref_u[None], {})[0][0].double().numpy()
        np.testing.assert_allclose(u, ref_u.double().numpy(), atol=1e-5)
        mine = push_forward(extract_attention_params(loaded, layer), u)
        assert np.abs(mine - out).max() < 1e-4
        assert np.abs(AttentionSublayer(loaded, layer).numpy(u) - mine).max() < 1e-10


@pytest.mark.parametrize("which", ["vanilla", "vit"])
def test_max_entropy_and_the_bound_on_zoo_layers(which, request):
    loaded, cap = request.getfixturevalue(which)
    dev = max_entropy_deviation(loaded, cap)
    assert dev.shape == (loaded.n_layers,) and dev.max() < 1e-5
    for layer in range(loaded.n_layers):
        u = layer_input(loaded, cap.hidden_states, layer)
        r = lipschitz_report(loaded, layer, u, eps=(1e-2, 0.3), n_draws=2, ascent_eps=(1e-1,), ascent_steps=10)
        assert r.log10_ratio <= 0 and r.estimate > 0


def test_a_zoo_block_iterates_as_a_demonstration(vanilla):
    loaded, cap = vanilla
    it = iterate_shared_block(loaded, cap.hidden_states[0], 4, layer=0)
    assert it.demonstration and it.log10_bound_attention is None  # pre-LN: the orbit's ball is not the map's
    block = copy.deepcopy(encoder_layers(loaded)[0].block).double()
    with torch.no_grad():
        first = block(torch.as_tensor(cap.hidden_states[0], dtype=torch.float64)[None], {})[0][0]

    assert it.result.w1_steps[0] == pytest.approx(w1_uniform(cap.hidden_states[0], first.numpy()), rel=1e-6)


@pytest.mark.parametrize(
    "name, reason",
    [
        ("text-ea", "Evolving Attention"),
        ("ha-vit", "keys of the first pass"),
        ("text-shift", "positional bias"),
        ("san-pairwise", "not query-key"),
    ],
)
def test_zoo_layers_that_are_not_maps_on_measures_are_refused_with_the_reason(name, reason):
    with pytest.raises(UnsupportedLayerError, match=reason):
        extract_attention_params(load_model(name, device="cpu"), 0)
