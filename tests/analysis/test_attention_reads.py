"""One read of a run's attention: a query's rows of every layer, a pooled window, top-k keys, and
the refusals (out of range, bad window, over the byte limit), on maps with known weights."""

import numpy as np
import pytest

from attnscope.analysis.attention_reads import (
    PooledWindow,
    SliceRequestError,
    SliceTooLargeError,
    TopKWindow,
    query_rows,
    read_window,
)
from attnscope.analysis.indices import OutOfRangeError
from attnscope.analysis.maps import AttentionMaps

L, H, N = 2, 3, 6
BIG = 1 << 30


def _maps(causal: bool) -> AttentionMaps:
    rng = np.random.default_rng(0)
    w = rng.random((L, H, N, N)).astype(np.float32)
    if causal:
        w = np.tril(w)
    w /= w.sum(-1, keepdims=True)
    return AttentionMaps(w, tuple(f"t{i}" for i in range(N)), causal=causal)


@pytest.mark.parametrize("causal", [False, True])
def test_a_query_sees_every_key_or_only_the_past(causal):
    maps = _maps(causal)
    got = query_rows(maps, 3)
    keys = 4 if causal else N  # a causal query 3 sees keys 0..3
    assert got.weights.shape == (L, H, keys) and got.tokens == [f"t{i}" for i in range(keys)] and got.token == "t3"
    np.testing.assert_array_equal(got.weights, maps.weights[:, :, 3, :keys])
    np.testing.assert_allclose(got.weights.sum(-1), 1.0, rtol=1e-6)  # nothing of the row is lost
    with pytest.raises(OutOfRangeError, match="this run has 6 positions"):
        query_rows(maps, N)


def test_a_window_of_one_head_is_the_map_cut_and_a_layer_keeps_its_heads():
    maps = _maps(False)
    one = read_window(maps, 1, 2, "1:4", "2:", max_bytes=BIG)
    assert isinstance(one, PooledWindow) and (one.rows, one.cols) == ((1, 4), (2, N))
    np.testing.assert_array_equal(one.weights, maps.weights[1, 2, 1:4, 2:])
    layer = read_window(maps, 0, None, None, None, max_bytes=BIG)
    np.testing.assert_array_equal(layer.weights, maps.weights[0])
    pooled = read_window(maps, 0, 1, None, None, stride=3, pool="max", max_bytes=BIG)
    assert pooled.weights.shape == (2, 2) and pooled.weights[1, 0] == maps.weights[0, 1, 3:, :3].max()


def test_top_k_gives_each_rows_largest_keys_in_absolute_positions():
    maps = _maps(False)
    got = read_window(maps, 1, 0, "0:2", "2:6", k=2, max_bytes=BIG)
    assert isinstance(got, TopKWindow) and got.indices.shape == (2, 2)
    row = maps.weights[1, 0, 0, 2:6]
    assert list(got.indices[0]) == [2 + i for i in np.argsort(-row, kind="stable")[:2]]
    np.testing.assert_array_equal(got.weights[0], np.sort(row)[::-1][:2])
    assert read_window(maps, 1, None, None, None, k=3, max_bytes=BIG).indices.shape == (H, N, 3)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"layer": 2}, OutOfRangeError, "layer=2 is out of range"),
        ({"head": 3}, OutOfRangeError, "head=3 is out of range"),
        ({"rows": "4:2"}, SliceRequestError, "empty or reversed"),
        ({"cols": "0:9"}, SliceRequestError, "out of bounds"),
        ({"k": 2, "stride": 2}, SliceRequestError, "send stride=1"),
        ({"k": 3, "cols": "0:2"}, SliceRequestError, "more than the 2 keys"),
    ],
)
def test_bad_windows_name_what_to_change(kwargs, error, message):
    args = {"layer": 0, "head": 0, "rows": None, "cols": None, **kwargs}
    with pytest.raises(error, match=message):
        read_window(_maps(False), args.pop("layer"), args.pop("head"), args.pop("rows"), args.pop("cols"), **args,
                    max_bytes=BIG)  # fmt: skip


def test_the_byte_limit_counts_cells_before_reading():
    maps = _maps(False)
    read_window(maps, 0, 0, None, None, max_bytes=4 * N * N)  # one head fits exactly
    with pytest.raises(SliceTooLargeError, match=f"{H * N * N} cells"):
        read_window(maps, 0, None, None, None, max_bytes=4 * N * N)  # a layer does not
    read_window(maps, 0, None, None, None, stride=2, max_bytes=4 * N * N)  # pooled, it does (3 x 3 x 3 cells)
    with pytest.raises(SliceTooLargeError, match="top-k slice"):
        read_window(maps, 0, None, None, None, k=N, max_bytes=4 * N * N)  # indices and weights: 2 x H x N x k
