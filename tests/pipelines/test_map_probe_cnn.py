"""The 2-layer CNN probe (docs/methods/heads.md) on planted maps: it finds the layer that carries the label,
and on a spatial pattern the flattened logistic probe reads too."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))

from _planted import probe_dataset as _dataset  # noqa: E402

from attnscope.analysis.map_probe import probe_layers  # noqa: E402
from attnscope.pipelines.map_probe_cnn import MapCNN, cnn_fit_score  # noqa: E402


def test_cnn_probe_finds_the_layer_that_carries_the_label():
    items, labels = _dataset(count=60)
    res = probe_layers(items, labels, size=8, folds=3, fit_score=cnn_fit_score(epochs=40), classifier="cnn")
    assert res.classifier == "cnn" and res.accuracy.shape == (2,)
    assert res.accuracy[1] >= 0.9, res.accuracy
    assert res.accuracy[0] <= 0.8, res.accuracy


def test_cnn_is_seeded_and_has_heads_as_channels():
    items, labels = _dataset(count=30)
    a = probe_layers(items, labels, size=8, folds=3, fit_score=cnn_fit_score(epochs=5, seed=1))
    b = probe_layers(items, labels, size=8, folds=3, fit_score=cnn_fit_score(epochs=5, seed=1))
    np.testing.assert_array_equal(a.accuracy, b.accuracy)
    assert MapCNN(12, 3).net[0].in_channels == 12
