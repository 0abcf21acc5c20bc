import numpy as np
import pytest
from _planted import maps_from, random_rows
from hypothesis import given, settings
from hypothesis import strategies as st

import attnscope.analysis.passes as passes
from attnscope.analysis.offsets import distance_matrix
from attnscope.analysis.passes import PARTS, reduce_maps, row_entropy


def _reference(maps, index):
    """Plain float64 numpy versions of every part."""
    w = maps.weights.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(w > 0, w * np.log(np.where(w > 0, w, 1)), 0).sum(-1)
    flat = w.reshape(*w.shape[:2], -1)
    groups = zip(index.starts, index.count, strict=True)
    band = np.stack([flat[..., index.flat[s : s + c]].sum(-1) for s, c in groups], -1)
    block = np.ix_(index.rows, index.cols)
    return {
        "entropy": ent,
        "top1": w.max(-1),
        "band_sum": band,
        "special_cols": np.swapaxes(w[..., list(maps.special)], -1, -2),
        "energy": (w[:, :, block[0], block[1]] ** 2).sum((-2, -1)),
        "distance_sum": (w * distance_matrix(maps)).sum((-2, -1)),
        "head_mean": w.mean(1),
    }


@st.composite
def maps_cases(draw):
    n = draw(st.integers(3, 14))
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 3)), n, n)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    w = random_rows(rng, shape, sparsity=draw(st.sampled_from([0.0, 0.3, 0.95])))
    if draw(st.booleans()):  # a grid after a CLS position
        for rows in range(1, n):
            if (n - 1) % rows == 0:
                grid = (rows, (n - 1) // rows)
        return maps_from(w, special=(0,), grid=grid)
    special = tuple(sorted(draw(st.sets(st.integers(0, n - 1), max_size=3))))
    return maps_from(w, special=special)


@settings(max_examples=60, deadline=None)
@given(maps_cases(), st.sampled_from([1, 2]), st.sampled_from([64, 1 << 20]))
def test_fused_pass_matches_plain_numpy(maps, workers, block_bytes):
    old = passes.BLOCK_BYTES
    passes.BLOCK_BYTES = block_bytes  # tiny blocks exercise the block edges
    try:
        red = reduce_maps(maps, PARTS, k=3, radius=1, workers=workers)
    finally:
        passes.BLOCK_BYTES = old
    ref = _reference(maps, red.index)
    for name, expect in ref.items():
        np.testing.assert_allclose(getattr(red, name), expect, atol=2e-5, err_msg=name)


def test_zero_weights_give_finite_entropy():
    w = np.zeros((1, 2, 4, 4), np.float32)
    w[0, 0] = np.eye(4)
    w[0, 1] = np.tril(np.ones((4, 4)))
    w[0, 1] /= w[0, 1].sum(-1, keepdims=True)
    red = reduce_maps(maps_from(w, causal=True), {"entropy"})
    np.testing.assert_allclose(red.entropy[0, 0], 0.0, atol=1e-7)
    np.testing.assert_allclose(red.entropy[0, 1], np.log([1, 2, 3, 4]), atol=1e-6)
    np.testing.assert_array_equal(red.top1[0, 0], 1.0)


def test_parts_not_asked_for_are_none_and_unknown_parts_raise():
    maps = maps_from(random_rows(np.random.default_rng(0), (1, 1, 5, 5)))
    red = reduce_maps(maps, {"band"})
    assert red.band_sum is not None and red.entropy is None and red.head_mean is None
    with pytest.raises(ValueError, match="unknown parts"):
        reduce_maps(maps, {"bands"})


def test_non_contiguous_weights_are_handled():
    w = random_rows(np.random.default_rng(1), (2, 3, 6, 6))
    view = np.swapaxes(np.ascontiguousarray(np.swapaxes(w, 0, 1)), 0, 1)  # same values, other strides
    assert not view.flags.c_contiguous
    a = reduce_maps(maps_from(w), PARTS, k=2)
    b = reduce_maps(maps_from(view), PARTS, k=2)
    np.testing.assert_allclose(a.entropy, b.entropy)
    np.testing.assert_allclose(a.band_sum, b.band_sum)


def test_row_entropy_of_uniform_rows_is_log_n():
    for n in (1, 2, 7, 300):
        np.testing.assert_allclose(row_entropy(np.full((3, n), 1.0 / n)), np.log(n), atol=1e-5)


class _ArraySource:
    """A ``MapSource`` over an eager stack that records the largest block it was asked for."""

    def __init__(self, w):
        self.w, self.largest = w, 0

    shape = property(lambda self: self.w.shape)
    nbytes = 0

    def block(self, layer, heads, rows, cols):
        out = self.w[layer][list(heads)][:, rows, cols]
        self.largest = max(self.largest, out.nbytes)
        return out


@pytest.mark.parametrize("causal", [False, True])
def test_lazy_maps_stream_bands_and_give_the_eager_reductions(causal, monkeypatch):
    rng = np.random.default_rng(3)
    n = 40
    w = random_rows(rng, (3, 2, n, n), sparsity=0.3)
    if causal:
        w = np.tril(w)
        w[:, :, np.arange(n), np.arange(n)] += 0.01  # no row left empty by the sparsity
        w /= w.sum(-1, keepdims=True)
    eager = maps_from(w, special=(0, n - 1), causal=causal)
    src = _ArraySource(eager.weights)
    lazy = type(eager).lazy(src, eager.tokens, special=eager.special, causal=causal)
    monkeypatch.setattr(passes, "BLOCK_BYTES", 4 * 2 * n * 3)  # 3 rows per block
    monkeypatch.setattr(passes, "LAZY_BAND_BYTES", 4 * 2 * n * 7)  # 6 rows per band: 7 bands, the last cut
    a = reduce_maps(eager, PARTS, workers=1)
    b = reduce_maps(lazy, PARTS, workers=2)
    assert src.largest == 4 * 2 * n * 6  # never more than one band of one layer
    for name in ("band_sum", "entropy", "top1", "special_cols", "energy", "distance_sum", "head_mean", "first_col"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=1e-6, atol=1e-7, err_msg=name)
    np.testing.assert_array_equal(a.first_col, w[..., 0])
    from attnscope.analysis.heads import classify_heads, sink_scores

    ha, hb = classify_heads(eager), classify_heads(lazy)
    assert ha.labels == hb.labels
    for key in ha.scores:
        np.testing.assert_allclose(hb.scores[key], ha.scores[key], rtol=1e-5, atol=1e-6, err_msg=key)
    np.testing.assert_allclose(sink_scores(lazy), sink_scores(eager), rtol=1e-6)


def test_progress_counts_every_band_of_every_layer_once(monkeypatch):
    """3 layers of 40 rows in bands of 6: 7 bands a layer, 21 in all; ``done`` runs 1..21 once each, and
    an eager pass counts one band a layer."""
    rng = np.random.default_rng(4)
    n = 40
    eager = maps_from(random_rows(rng, (3, 2, n, n)), special=(0,))
    lazy = type(eager).lazy(_ArraySource(eager.weights), eager.tokens, special=eager.special)
    monkeypatch.setattr(passes, "BLOCK_BYTES", 4 * 2 * n * 3)
    monkeypatch.setattr(passes, "LAZY_BAND_BYTES", 4 * 2 * n * 7)
    seen = []
    reduce_maps(lazy, PARTS, workers=2, progress=lambda done, total: seen.append((done, total)))
    assert sorted(seen) == [(i, 21) for i in range(1, 22)]
    seen.clear()
    reduce_maps(eager, PARTS, workers=1, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
