"""Pooled overviews and per-row top-k keys, on inputs with closed-form answers, and the same
slices of lazy-like maps (a ``MapSource``) read a band of rows at a time."""

import numpy as np
import pytest

from attnscope.analysis import slices
from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.slices import parse_range, pool_blocks, pooled_slice, pooled_with_keys, top_k, top_k_slice


def test_pool_max_and_mean_of_exact_blocks():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(pool_blocks(x, 2, "max"), [[5, 7], [13, 15]])
    np.testing.assert_array_equal(pool_blocks(x, 2, "mean"), [[2.5, 4.5], [10.5, 12.5]])
    np.testing.assert_array_equal(pool_blocks(x, 4, "mean"), [[7.5]])
    np.testing.assert_array_equal(pool_blocks(x, 1, "max"), x)


def test_edge_blocks_reduce_over_the_cells_they_have():
    x = np.ones((5, 3), np.float32)
    x[4, 2] = 7.0
    mean = pool_blocks(x, 2, "mean")  # blocks of 2x2, 2x1, 1x2, 1x1 cells
    assert mean.shape == (3, 2)
    np.testing.assert_allclose(mean, [[1, 1], [1, 1], [1, 7]])
    assert pool_blocks(x, 2, "max")[2, 1] == 7.0
    # the mean of a pooled uniform causal row keeps the row mass: sum(mean * counts) = 1
    row = np.full((1, 10), 0.1, np.float32)
    pooled = pool_blocks(row, 4, "mean")
    np.testing.assert_allclose((pooled * np.array([4, 4, 2])).sum(), 1.0, rtol=1e-6)


def test_pool_keeps_leading_axes_and_refuses_bad_arguments():
    x = np.random.default_rng(0).random((3, 7, 9)).astype(np.float32)
    out = pool_blocks(x, 3, "max")
    assert out.shape == (3, 3, 3)
    np.testing.assert_array_equal(out[1], pool_blocks(x[1], 3, "max"))
    assert out[2, 0, 0] == x[2, :3, :3].max()
    with pytest.raises(ValueError, match="stride"):
        pool_blocks(x, 0)
    with pytest.raises(ValueError, match="pool"):
        pool_blocks(x, 2, "median")


def test_top_k_is_sorted_and_breaks_ties_by_index():
    x = np.array([[0.1, 0.4, 0.1, 0.4], [0.25, 0.25, 0.25, 0.25]], np.float32)
    idx, w = top_k(x, 3)
    np.testing.assert_array_equal(idx, [[1, 3, 0], [0, 1, 2]])
    np.testing.assert_allclose(w, [[0.4, 0.4, 0.1], [0.25, 0.25, 0.25]])
    with pytest.raises(ValueError, match="between 1 and"):
        top_k(x, 5)
    with pytest.raises(ValueError, match="between 1 and"):
        top_k(x, 0)


@pytest.mark.parametrize(
    "text, size, expected",
    [(None, 9, (0, 9)), ("2:5", 9, (2, 5)), (":4", 9, (0, 4)), ("3:", 9, (3, 9)), (":", 9, (0, 9))],
)
def test_parse_range(text, size, expected):
    assert parse_range(text, size, "rows") == expected


@pytest.mark.parametrize(
    "text, message",
    [("5:2", "reversed"), ("3:3", "empty"), ("0:10", "out of bounds"), ("1-3", "start:stop"), ("a:b", "integers")],
)
def test_parse_range_names_the_limit(text, message):
    with pytest.raises(ValueError, match=message) as err:
        parse_range(text, 9, "cols")
    assert "cols=" in str(err.value)


class ShiftSource:
    """A ``MapSource`` whose every head attends to the previous key (the first row to itself),
    counting the weights each block call returns."""

    def __init__(self, n: int, heads: int = 2):
        self.n, self.heads, self.served = n, heads, []

    shape = property(lambda self: (1, self.heads, self.n, self.n))
    nbytes = 0

    def block(self, layer, heads, rows, cols):
        q = np.arange(self.n)[rows.start : rows.stop]
        full = np.zeros((len(heads), q.size, self.n), np.float32)
        full[:, np.arange(q.size), np.maximum(q - 1, 0)] = 1.0
        out = full[:, :, cols]
        self.served.append(out.size)
        return out


def test_slices_of_lazy_maps_stream_bands_of_rows(monkeypatch):
    monkeypatch.setattr(slices, "ROW_BAND_CELLS", 2 * 64 * 8)  # 8 rows of both heads per band
    src = ShiftSource(64)
    maps = AttentionMaps.lazy(src, [f"t{i}" for i in range(64)], causal=True)
    pooled = pooled_slice(maps, 0, None, (0, 64), (0, 64), stride=8, mode="max")
    assert pooled.shape == (2, 8, 8) and max(src.served) <= 2 * 8 * 64
    # a previous-token map pooled by 8: the diagonal blocks and the ones just left of them
    expected = np.eye(8) + np.eye(8, k=-1)
    np.testing.assert_array_equal(pooled[0], expected)
    mean = pooled_slice(maps, 0, [1], (8, 24), (0, 64), stride=8, mode="mean")
    np.testing.assert_allclose(mean[0].sum(axis=1) * 64, [8, 8])  # every row's mass is in the slice
    idx, w = top_k_slice(maps, 0, [0], (10, 20), (0, 64), k=2)
    np.testing.assert_array_equal(idx[0, :, 0], np.arange(9, 19))
    np.testing.assert_array_equal(w[0, :, 0], 1.0)
    idx, _ = top_k_slice(maps, 0, [0], (10, 12), (30, 40), k=3)  # absolute key positions
    assert idx.min() >= 30 and idx.max() < 40


def test_pooled_with_keys_reads_each_row_blocks_mean_weight_on_the_keys():
    src = ShiftSource(64)
    maps = AttentionMaps.lazy(src, [f"t{i}" for i in range(64)], causal=True)
    pooled, on_keys = pooled_with_keys(maps, 0, [0], (0, 20), (0, 64), stride=8, mode="mean", keys=[0, 9, 63])
    np.testing.assert_array_equal(pooled, pooled_slice(maps, 0, [0], (0, 20), (0, 64), stride=8, mode="mean"))
    # rows 0 and 1 read key 0, row 10 reads key 9, nobody reads key 63; the last block has 4 rows
    np.testing.assert_allclose(on_keys[0], [[2 / 8, 0, 0], [0, 1 / 8, 0], [0, 0, 0]])
