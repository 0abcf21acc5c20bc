import numpy as np
import pytest
from _planted import maps_from, random_rows
from _planted import probe_dataset as _dataset

from attnscope.analysis.map_probe import adaptive_pool, crop_pad, map_features, probe_layers


def test_probe_finds_the_layer_that_carries_the_label():
    items, labels = _dataset()
    res = probe_layers(items, labels, size=8, folds=4)
    assert res.accuracy.shape == (2,) and res.chance == 0.5 and res.folds == 4
    assert res.accuracy[1] >= 0.95
    assert res.accuracy[0] <= 0.8  # noise: near chance


def test_probe_pooled_features_work_with_different_lengths():
    a, la = _dataset(20, n=10, seed=1)
    b, lb = _dataset(20, n=14, seed=2)
    res = probe_layers(a + b, la + lb, size=6, mode="pool", folds=4)
    assert res.accuracy[1] >= 0.9


def test_crop_pad_and_features_shape():
    x = np.arange(9, dtype=np.float32).reshape(1, 3, 3)
    np.testing.assert_array_equal(crop_pad(x, 2)[0], [[0, 1], [3, 4]])
    np.testing.assert_array_equal(crop_pad(x, 4)[0, 3], 0)
    maps = maps_from(random_rows(np.random.default_rng(0), (2, 3, 5, 5)))
    assert map_features(maps, 1, size=4).shape == (3 * 16,)
    with pytest.raises(ValueError, match="mode"):
        map_features(maps, 0, mode="resize")


def test_adaptive_pool_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for n, size in [(10, 4), (7, 7), (5, 8), (12, 3)]:
        x = rng.random((2, n, n)).astype(np.float32)
        expect = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x), size).numpy()
        np.testing.assert_allclose(adaptive_pool(x, size), expect, atol=1e-6)


def test_probe_input_errors():
    items, labels = _dataset(6)
    with pytest.raises(ValueError, match="labels"):
        probe_layers(items, labels[:-1])
    with pytest.raises(ValueError, match="two classes"):
        probe_layers(items, ["a"] * 6)


def test_a_custom_classifier_sees_the_same_folds_and_map_shapes():
    items, labels = _dataset()
    seen = []

    def fit_score(x_tr, y_tr, x_te, y_te):
        seen.append((x_tr.shape, x_te.shape, len(set(y_tr))))
        return 0.25

    res = probe_layers(items, labels, size=8, folds=4, fit_score=fit_score, classifier="constant")
    assert res.classifier == "constant" and np.allclose(res.accuracy, 0.25)
    assert len(seen) == 8  # 2 layers x 4 folds
    assert all(tr[1:] == (2, 8, 8) and tr[0] + te[0] == 40 and k == 2 for tr, te, k in seen)


def test_probe_keeps_each_examples_held_out_outcome():
    """40 examples in 4 folds of 10: each layer's mean fold accuracy is the share of examples predicted
    right, and the carrying layer gets (nearly) every one right."""
    items, labels = _dataset()
    res = probe_layers(items, labels, size=8, folds=4)
    assert res.correct.shape == (2, 40) and res.correct.dtype == bool
    np.testing.assert_allclose(res.correct.mean(axis=1), res.accuracy, atol=1e-6)
    assert res.correct[1].sum() >= 38


def test_a_classifier_that_gives_only_accuracies_keeps_no_per_example_values():
    items, labels = _dataset()
    res = probe_layers(items, labels, size=8, folds=4, fit_score=lambda *a: 0.5)
    assert res.correct is None and np.allclose(res.accuracy, 0.5)
    with pytest.raises(ValueError, match="shape"):
        probe_layers(items, labels, size=8, folds=4, fit_score=lambda x_tr, y_tr, x_te, y_te: np.ones(3, bool))
