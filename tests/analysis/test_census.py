import numpy as np
import pytest
from _planted import maps_from, random_rows

from attnscope.analysis.census import census
from attnscope.analysis.shift import scan_shifts


def _items(count, shape=(2, 3, 6, 6), seed=0):
    rng = np.random.default_rng(seed)
    return [maps_from(random_rows(rng, shape)) for _ in range(count)]


def test_mean_and_std_per_head_equal_numpy():
    items = _items(7)
    fn = lambda m: scan_shifts(m, k=2).shift_score  # noqa: E731
    result = census(iter(items), fn, progress=False)
    stacked = np.stack([fn(m) for m in items]).astype(np.float64)
    assert result.n == 7 and result.mean.shape == (2, 3)
    np.testing.assert_allclose(result.mean, stacked.mean(0), atol=1e-12)
    np.testing.assert_allclose(result.std, stacked.std(0), atol=1e-12)
    np.testing.assert_array_equal(result.count, 7)


def test_dict_results_and_nan_skipping():
    values = [np.array([1.0, np.nan]), np.array([3.0, 5.0]), np.array([5.0, np.nan])]
    items = _items(3)
    which = {id(m): i for i, m in enumerate(items)}
    result = census(items, lambda m: {"x": values[which[id(m)]], "one": np.ones(2)}, progress=False)
    np.testing.assert_allclose(result.mean["x"], [3.0, 5.0])
    np.testing.assert_allclose(result.std["x"], [np.std([1, 3, 5]), 0.0])
    np.testing.assert_array_equal(result.count["x"], [3, 1])
    np.testing.assert_allclose(result.mean["one"], 1.0)


def test_shape_changes_and_empty_input_raise():
    mixed = _items(2) + _items(1, shape=(1, 3, 6, 6))
    with pytest.raises(ValueError, match="same layers and heads"):
        census(mixed, lambda m: m.weights.mean((2, 3)), progress=False)
    with pytest.raises(ValueError, match="no examples"):
        census([], lambda m: m.weights.mean((2, 3)), progress=False)


def test_progress_bar_is_drawn(capsys):
    census(_items(3), lambda m: m.weights.mean((2, 3)), desc="heads", progress=True)
    assert "heads" in capsys.readouterr().err
