"""``walk_head_means``: evolution's layer similarity and rollout through every layer, from one top-down
walk that keeps two head-mean maps, equal to the analyses that keep them all (``layer_similarity``,
``rollout_importance``), on a hand-computed case, on random eager maps and on lazy maps read a band of
rows at a time."""

import numpy as np
import pytest
from _planted import maps_from, random_rows

import attnscope.analysis.passes as passes
from attnscope.analysis.evolution import layer_similarity
from attnscope.analysis.mean_walk import walk_head_means
from attnscope.analysis.rollout import rollout_importance


def test_rollout_by_hand_through_each_layer():
    """Layer 0's head mean W1 = [[0,1,0],[0,0,1],[.5,0,.5]], layer 1 sends every token to token 0 (the
    case of ``test_rollout``): R2 = [[.5,.5,0],[.25,.5,.25],[.375,.25,.375]]; through layer 0 alone,
    Ahat1 = [[.5,.5,0],[0,.5,.5],[.25,0,.75]]."""
    a = [[0, 1, 0], [0, 0, 1], [0, 0, 1]]
    b = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
    c = [[1, 0, 0], [1, 0, 0], [1, 0, 0]]
    walk = walk_head_means(maps_from([[a, b], [c, c]], special=(0,)), rows=(0, 2, None))
    np.testing.assert_allclose(walk.rollout[0], [[0.5, 0.5, 0], [0.5, 0.5, 0]], atol=1e-7)
    np.testing.assert_allclose(walk.rollout[2], [[0.25, 0, 0.75], [0.375, 0.25, 0.375]], atol=1e-7)
    np.testing.assert_allclose(
        walk.rollout[None][1], np.mean([[0.5, 0.5, 0], [0.25, 0.5, 0.25], [0.375, 0.25, 0.375]], 0)
    )


def test_identical_layers_are_similar_and_uniform_ones_stay_uniform():
    n = 5
    same = np.tile(random_rows(np.random.default_rng(0), (1, 3, n, n)), (4, 1, 1, 1))
    walk = walk_head_means(maps_from(same))
    np.testing.assert_allclose(walk.js_next, 0, atol=1e-6)
    np.testing.assert_allclose(walk.cosine_next, 1, atol=1e-6)
    uniform = walk_head_means(maps_from(np.full((3, 2, n, n), 1 / n)), rows=(1,))
    for t in range(3):  # t + 1 layers of Ahat = U / 2 + I / 2 keep 2^-(t+1) of row 1 and spread the rest evenly
        kept = 0.5 ** (t + 1)
        np.testing.assert_allclose(uniform.rollout[1][t], (1 - kept) / n + kept * (np.arange(n) == 1), atol=1e-7)


@pytest.mark.parametrize("causal", [False, True])
def test_equals_the_analyses_that_keep_every_head_mean_eager_and_lazy(causal, monkeypatch):
    from test_passes import _ArraySource

    rng = np.random.default_rng(5)
    n, n_layer = 23, 4
    w = random_rows(rng, (n_layer, 3, n, n), sparsity=0.4)
    if causal:
        w = np.tril(w)
        w[:, :, np.arange(n), np.arange(n)] += 0.01
        w /= w.sum(-1, keepdims=True)
    eager = maps_from(w, special=(0,), causal=causal)
    lazy = type(eager).lazy(_ArraySource(eager.weights), eager.tokens, special=eager.special, causal=causal)
    monkeypatch.setattr(passes, "LAZY_BAND_BYTES", 4 * 3 * n * 5)  # 5 rows a band: 5 bands a layer
    js, cos = layer_similarity(eager.weights.mean(1))
    for maps in (eager, lazy):
        seen: list = []
        walk = walk_head_means(maps, rows=(n - 1, 0, None), progress=lambda d, t, seen=seen: seen.append((d, t)))
        total = n_layer * (1 if maps is eager else 5)  # lazy: 5 bands of 5 rows a layer
        assert seen == [(i, total) for i in range(1, total + 1)]
        np.testing.assert_allclose(walk.js_next, js, atol=1e-6)
        np.testing.assert_allclose(walk.cosine_next, cos, atol=1e-6)
        for row in (n - 1, 0, None):
            for t in range(n_layer):
                through = eager.select(layers=range(t + 1))
                want = rollout_importance(through, row).values
                np.testing.assert_allclose(walk.rollout[row][t], want, atol=1e-6, err_msg=f"row {row} through {t}")


def test_a_check_stops_the_walk_and_a_row_outside_is_refused():
    maps = maps_from(random_rows(np.random.default_rng(1), (3, 2, 6, 6)))
    calls = []

    def check():
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        walk_head_means(maps, check=check)
    with pytest.raises(ValueError, match="outside 0..5"):
        walk_head_means(maps, rows=(6,))
