"""HA zoo models expose their shared block: iterating it to the trained depth reproduces the model's
own hidden states, and the fixed-point analysis runs past that depth."""

import numpy as np
import pytest

from attnscope.models.capture import capture, capture_image
from attnscope.models.loading import load_model
from attnscope.models.zoo import data, samples
from attnscope.models.zoo.manifest import read_manifest
from attnscope.pipelines.shared_block import block_step, find_shared_block, iterate_shared_block

pytestmark = pytest.mark.skipif(read_manifest("text-ha") is None, reason="zoo not trained; run make zoo")


def _reproduces_depth(loaded, hidden):
    x0 = hidden[0].astype(np.float64)
    _, step, depth, start, demo = block_step(loaded, None, x0)
    assert (depth, start, demo) == (loaded.n_layers, 0, False)
    x = x0
    for _ in range(depth):
        x = step(x)
    np.testing.assert_allclose(x, hidden[-1], atol=2e-4)


def test_text_ha_iterates_its_shared_block():
    loaded = load_model("text-ha", device="cpu")
    assert find_shared_block(loaded) is not None
    cap = capture(loaded, "a gripping , beautifully acted film")
    assert cap.hidden_states.shape[0] == loaded.n_layers + 1
    _reproduces_depth(loaded, cap.hidden_states)
    it = iterate_shared_block(loaded, "a gripping , beautifully acted film", n_steps=12)
    assert it.result.w1_steps.shape == (12,) and not it.demonstration and it.trained_depth == loaded.n_layers


@pytest.mark.skipif(not data.available(), reason="data folder not found; set ATTNSCOPE_DATA_DIR")
def test_vision_ha_reproduces_its_depth():
    loaded = load_model("ha-vit", device="cpu")
    image, _ = samples.sample("mnist", 3)
    cap = capture_image(loaded, loaded.prepare_image(image))
    _reproduces_depth(loaded, cap.hidden_states)


def test_non_shared_zoo_models_have_no_shared_block():
    assert find_shared_block(load_model("text-vanilla", device="cpu")) is None
