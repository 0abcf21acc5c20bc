"""The model view's thumbnails: every head mean-pooled with each row block's weight on the first and
special keys; a pass stopped part way resumes where it stopped."""

import numpy as np
import pytest

from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.slices import pool_blocks
from attnscope.analysis.thumbnails import compute_thumbnails, hideable_keys, thumbnail_stride


def _maps(n: int = 130) -> AttentionMaps:
    rng = np.random.default_rng(0)
    w = rng.random((3, 2, n, n)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    return AttentionMaps(weights=w, tokens=[f"t{i}" for i in range(n)], special=(0, n - 1))


def test_thumbnails_pool_every_head_and_read_the_hideable_keys():
    maps = _maps()
    thumbs = compute_thumbnails(maps)
    assert thumbnail_stride(130) == thumbs.stride == 3 and thumbs.keys == hideable_keys(maps) == (0, 129)
    np.testing.assert_allclose(thumbs.means, pool_blocks(maps.weights, 3, "mean"), atol=1e-6)
    on_first = maps.weights[..., 0]  # [layer, head, query]
    blocks = [on_first[..., i : i + 3].mean(-1) for i in range(0, 130, 3)]
    np.testing.assert_allclose(thumbs.key_means[..., 0], np.stack(blocks, -1), atol=1e-6)


def test_a_stopped_pass_resumes_at_the_layer_it_stopped_before():
    maps, done, calls = _maps(), {}, []

    def stop_at_third():
        calls.append(len(done))
        if len(done) == 2:
            raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError):
        compute_thumbnails(maps, check=stop_at_third, done=done)
    assert sorted(done) == [0, 1]
    part = compute_thumbnails(maps, layers=[2, 0], done=done, check=lambda: calls.append("again"))
    assert calls.count("again") == 1  # layer 2 only
    np.testing.assert_array_equal(part.means[1], compute_thumbnails(maps).means[0])
