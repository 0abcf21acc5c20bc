"""``QKMapSource.block`` against the plain float64 formula, for every kind of layer it computes
(causal without a mask, bool and float masks, soft-capping, learned sinks, grouped-query heads) and
for row and column ranges that start, end and cut inside its row chunks (``CHUNK_ROWS``)."""

import numpy as np
import pytest
import torch

from attnscope.models import lazy_maps
from attnscope.models.lazy_maps import QKLayer, QKMapSource

N, H, KV, D = 300, 6, 2, 8  # 300 rows: three chunks of 128 rows, the last one short


def _reference(lay: QKLayer) -> np.ndarray:
    """float64 ``[head, query, key]`` of softmax(mask(softcap(q k^T scale))) (sinks in the sum)."""
    q = lay.query.double().numpy()
    k = np.repeat(lay.key.double().numpy(), H // KV, axis=0)
    s = np.einsum("hqd,hkd->hqk", q, k) * lay.scale
    if lay.softcap is not None:
        s = lay.softcap * np.tanh(s / lay.softcap)
    if lay.mask is not None:
        m = lay.mask.numpy()
        s = np.where(m, s, -np.inf) if m.dtype == bool else s + m
    elif lay.is_causal:
        s = np.where(np.tril(np.ones((N, N), bool)), s, -np.inf)
    top = s.max(-1, keepdims=True)
    if lay.sinks is not None:
        top = np.maximum(top, lay.sinks.double().numpy()[:, None, None])
    e = np.exp(s - top)
    total = e.sum(-1, keepdims=True)
    if lay.sinks is not None:
        total = total + np.exp(lay.sinks.double().numpy()[:, None, None] - top)
    return e / total


def _layers() -> dict[str, QKLayer]:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(H, N, D, generator=g) * 2
    k = torch.randn(KV, N, D, generator=g) * 2
    window = torch.ones(N, N, dtype=torch.bool).tril() & ~torch.ones(N, N, dtype=torch.bool).tril(-20)
    bias = torch.randn(1, N, N, generator=g)
    sinks = torch.randn(H, generator=g)
    return {
        "causal": QKLayer(q, k, None, True, 0.3),
        "bool-window": QKLayer(q, k, window[None], False, 0.3),
        "float-bias": QKLayer(q, k, bias, False, 0.3),
        "softcap-causal": QKLayer(q, k, None, True, 0.3, softcap=2.0),
        "sinks-causal": QKLayer(q, k, None, True, 0.3, sinks=sinks),
        "encoder": QKLayer(q, k, None, False, 0.3),
    }


@pytest.mark.parametrize("kind", list(_layers()))
@pytest.mark.parametrize(
    ("heads", "rows", "cols"),
    [
        (list(range(H)), slice(None), slice(None)),  # a whole layer
        ([4], slice(None), slice(None)),  # one head
        ([1, 5], slice(100, 260), slice(0, 300)),  # rows across a chunk edge
        ([0, 3], slice(7, 299), slice(50, 180)),  # a window of keys, some after causal rows
        ([2], slice(290, 300), slice(295, 300)),  # the last short chunk
    ],
)
def test_blocks_equal_the_float64_formula(kind, heads, rows, cols):
    assert lazy_maps.CHUNK_ROWS < N  # the ranges above cut inside chunks
    lay = _layers()[kind]
    got = QKMapSource([lay]).block(0, heads, rows, cols)
    want = _reference(lay)[heads][:, rows, cols]
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)


def test_causal_rows_are_zero_after_their_position_and_full_rows_sum_to_one():
    src = QKMapSource([_layers()["causal"]])
    w = src.block(0, range(H), slice(None), slice(None))
    assert np.all(np.triu(w, 1) == 0.0)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("kind", list(_layers()))
@pytest.mark.parametrize(
    ("heads", "rows", "cols", "stride", "mode"),
    [
        (list(range(H)), (0, N), (0, N), 64, "mean"),  # a thumbnail: blocks cut by the edge (300 = 4 x 64 + 44)
        ([1, 5], (100, 260), (0, 300), 16, "max"),  # rows across a chunk edge
        ([0, 3], (7, 299), (50, 181), 7, "mean"),  # a window of keys, some after causal rows
        ([2], (290, 300), (0, 300), 300, "max"),  # one block
    ],
)
def test_pooled_equals_pooling_the_float64_formula(kind, heads, rows, cols, stride, mode):
    from attnscope.analysis.slices import pool_blocks

    lay = _layers()[kind]
    keys = [0, 17, 299]
    got, on_keys = QKMapSource([lay]).pooled(0, heads, rows, cols, stride, mode, keys)
    full = _reference(lay)[heads]
    want = pool_blocks(full[:, slice(*rows), slice(*cols)], stride, mode)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)
    # each block of rows' mean weight on each key: the rows' own weights, averaged
    band = full[:, slice(*rows)][:, :, keys]  # [head, rows, key]
    n_blocks = -(-(rows[1] - rows[0]) // stride)
    means = np.stack([band[:, i * stride : (i + 1) * stride].mean(axis=1) for i in range(n_blocks)], axis=1)
    np.testing.assert_allclose(on_keys, means, rtol=0, atol=2e-6)


@pytest.mark.parametrize("kind", list(_layers()))
@pytest.mark.parametrize(
    ("heads", "rows", "cols", "k"),
    [
        (list(range(H)), (0, N), (0, N), 8),  # a layer: the first causal rows have fewer than 8 keys (ties at 0)
        ([1, 5], (100, 260), (40, 300), 3),  # rows across a chunk edge, a window of keys
        ([2], (290, 300), (295, 300), 5),  # every key of the window
    ],
)
def test_top_k_equals_the_float64_formulas_top_k_ties_to_the_lower_index(kind, heads, rows, cols, k):
    from attnscope.analysis.slices import top_k

    lay = _layers()[kind]
    idx, w = QKMapSource([lay]).top_k(0, heads, rows, cols, k)
    block = QKMapSource([lay]).block(0, heads, slice(*rows), slice(*cols))  # the same float32 weights
    want_idx, want_w = top_k(block, k)
    np.testing.assert_array_equal(idx, want_idx + cols[0])
    np.testing.assert_array_equal(w, want_w)
    np.testing.assert_allclose(w, np.take_along_axis(_reference(lay)[heads][:, slice(*rows)], idx, -1), atol=2e-6)


def test_top_k_breaks_ties_to_the_lower_index():
    q = torch.zeros(1, 6, 2)  # every logit 0: a causal row q spreads 1 / (q + 1) over keys 0..q
    src = QKMapSource([QKLayer(q, torch.zeros(1, 6, 2), None, True, 1.0)])
    idx, w = src.top_k(0, [0], (0, 6), (0, 6), 3)
    np.testing.assert_array_equal(idx[0], [[0, 1, 2], [0, 1, 2], [0, 1, 2], [0, 1, 2], [0, 1, 2], [0, 1, 2]])
    np.testing.assert_allclose(w[0, :, 0], [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 6], rtol=1e-6)
    np.testing.assert_array_equal(w[0, 0], [1, 0, 0])  # the first row: one key, then the zeros of keys 1, 2
