"""Zoo models load through the registry and capture like any model (text and images)."""

import numpy as np
import pytest

from attnscope.models.capture import (
    EmptyInputError,
    TooManyTokensError,
    WrongModalityError,
    capture,
    capture_batch,
    capture_image,
)
from attnscope.models.loading import load_model
from attnscope.models.registry import get_spec, list_specs
from attnscope.models.zoo import data, samples
from attnscope.models.zoo.configs import ZOO
from attnscope.models.zoo.manifest import read_manifest

TRAINED = [n for n in ZOO if read_manifest(n) is not None]
TEXT = [n for n in TRAINED if ZOO[n]["modality"] == "text"]
VISION = [n for n in TRAINED if ZOO[n]["modality"] == "vision"]


def test_registry_lists_every_trained_zoo_model():
    names = {s.name for s in list_specs()}
    assert set(TRAINED) <= names
    for n in TRAINED:
        spec = get_spec(n)
        assert spec.source == "zoo" and spec.extra["accuracy"] == read_manifest(n)["eval_accuracy"]


@pytest.mark.parametrize("name", TEXT)
def test_text_capture(name):
    loaded = load_model(name, device="cpu")
    cap = capture(loaded, "a gorgeous , witty , seductive movie .")
    assert cap.maps.shape == (loaded.n_layers, loaded.n_heads, 9, 9)
    assert cap.maps.tokens[0] == "[CLS]" and cap.maps.tokens[2] == "gorgeous" and cap.maps.special == (0,)
    assert cap.output["labels"] == ["negative", "positive"] and abs(sum(cap.output["probs"]) - 1) < 1e-5
    batch = capture_batch(loaded, ["a gorgeous , witty , seductive movie .", "dull"])
    np.testing.assert_allclose(batch[0].maps.weights, cap.maps.weights, atol=1e-6)
    with pytest.raises(EmptyInputError):
        capture(loaded, "   ")
    with pytest.raises(TooManyTokensError, match="at most 64"):
        capture(loaded, "word " * 80)
    with pytest.raises(WrongModalityError):
        capture_image(loaded, np.zeros((28, 28), np.uint8))


@pytest.mark.skipif(not data.available(), reason="data folder not found; set ATTNSCOPE_DATA_DIR")
@pytest.mark.parametrize("name", VISION)
def test_image_capture(name):
    loaded = load_model(name, device="cpu")
    image, label = samples.sample("mnist", 1)
    cap = capture_image(loaded, loaded.prepare_image(image))
    rows, cols = cap.maps.grid
    assert cap.maps.shape[:2] == (loaded.n_layers, loaded.n_heads)
    assert cap.maps.n_tokens == rows * cols + len(cap.maps.special)
    assert cap.output["labels"] == [str(i) for i in range(10)]
    with pytest.raises(WrongModalityError):
        capture(loaded, "a digit")
