import numpy as np
import pytest
from _planted import maps_from, planted_1d, planted_2d, random_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from attnscope.analysis.heads import (
    classify_heads,
    duplicate_token_scores,
    induction_scores,
    make_probe_ids,
)


def _sink_head(n, col, mass, rng):
    """Rows put ``mass`` on column ``col`` and spread the rest at random over the other keys."""
    w = random_rows(rng, (n, n)) * (1 - mass)
    w[:, col] += mass
    return w


def test_planted_types_get_their_labels():
    n = 24
    rng = np.random.default_rng(0)
    plants = [{-1: 1.0}, {1: 1.0}, {0: 1.0}, {-3: 1.0}, {-2: 0.2, -1: 0.2, 0: 0.2, 1: 0.2, 2: 0.2}]
    base = planted_1d(plants, n=n, special=(0, n - 1)).weights[0]
    uniform = np.full((n, n), 1.0 / n, np.float32)
    heads = np.concatenate([base, [_sink_head(n, 0, 0.8, rng), _sink_head(n, n - 1, 0.7, rng), uniform]])
    maps = maps_from(heads[None], special=(0, n - 1))
    types = classify_heads(maps)
    labels = [types.labels_of(0, h) for h in range(8)]
    assert labels[0] == ("previous",)
    assert labels[1] == ("next",)
    assert labels[2] == ("self",)
    assert labels[3] == ("shift-3",)
    assert labels[4] == ("local",)  # spread over a small window: local, not a single shift
    assert labels[5] == ("cls-sink",)
    assert labels[6] == ("sep-sink",)
    assert labels[7] == ("broad",)
    assert types.heads_with("previous") == ["L0H0"]
    np.testing.assert_allclose(types.scores["previous"][0, 0], 1.0, atol=1e-6)
    np.testing.assert_allclose(types.scores["broad"][0, 7], 1.0, atol=1e-5)
    assert types.scores["cls_sink"][0, 5] == pytest.approx(0.8, abs=0.05)


def test_a_head_can_carry_several_labels():
    # half the mass on the previous token, half on [CLS]: a previous-token head and a sink
    maps = planted_1d([{-1: 0.5}], n=12, special=(0,))
    assert set(classify_heads(maps).labels_of(0, 0)) == {"previous", "cls-sink"}


def test_sink_heads_are_not_shift_heads():
    # 0.7 on [CLS]; the remaining 0.3 all on the previous token: renormalising would call it a shift
    maps = planted_1d([{-1: 0.3}], n=12, special=(0,))
    labels = classify_heads(maps).labels_of(0, 0)
    assert "cls-sink" in labels and "previous" not in labels


def test_grid_labels():
    maps = planted_2d([{(1, 0): 0.95}, {(0, 0): 0.9}], grid=(4, 4), radius=1)
    types = classify_heads(maps, radius=1)
    assert types.labels_of(0, 0) == ("shift(+1,+0)",)
    assert types.labels_of(0, 1) == ("self",)
    assert "previous" not in types.scores


def test_probe_ids_repeat_and_exclude():
    ids = make_probe_ids(50, 20, seed=1, exclude_ids=[0, 1, 2])
    assert ids.shape == (20,) and ids.dtype == np.int64
    np.testing.assert_array_equal(ids[:10], ids[10:])
    assert len(set(ids[:10].tolist())) == 10 and not set(ids.tolist()) & {0, 1, 2}
    np.testing.assert_array_equal(ids, make_probe_ids(50, 20, seed=1, exclude_ids=[0, 1, 2]))
    assert not np.array_equal(ids, make_probe_ids(50, 20, seed=2, exclude_ids=[0, 1, 2]))
    with pytest.raises(ValueError, match="even"):
        make_probe_ids(50, 7)
    with pytest.raises(ValueError, match="distinct"):
        make_probe_ids(5, 20)


def _probe_maps(t=6):
    """[CLS] + 2t probe tokens + [SEP]; head 0 attends to the other copy of its token (duplicate;
    maps are bidirectional), head 1 to the token after the earlier copy (induction), head 2 to the
    previous token. Rows without a target attend to [CLS]."""
    ids = np.concatenate([[101], make_probe_ids(1000, 2 * t, seed=0, exclude_ids=[101, 102]), [102]])
    n = ids.size
    w = np.zeros((1, 3, n, n), np.float32)
    w[0, :, :, 0] = 1.0
    for q in range(1, 1 + t):
        w[0, 0, q, 0], w[0, 0, q, q + t] = 0.0, 1.0
    for q in range(1 + t, 1 + 2 * t):
        w[0, :, q, 0] = 0.0
        w[0, 0, q, q - t] = 1.0
        w[0, 1, q, q - t + 1] = 1.0
        w[0, 2, q, q - 1] = 1.0
    return maps_from(w, special=(0, n - 1)), ids


def test_duplicate_and_induction_scores_on_a_planted_probe():
    maps, ids = _probe_maps()
    np.testing.assert_allclose(duplicate_token_scores(maps, ids)[0], [1.0, 0.0, 0.0], atol=1e-6)
    ind = induction_scores(maps, ids)[0]
    np.testing.assert_allclose(ind, [0.0, 1.0, 0.0], atol=1e-6)
    types = classify_heads(maps, probe=(maps, ids))
    assert "duplicate" in types.labels_of(0, 0) and "induction" in types.labels_of(0, 1)
    assert "induction" not in types.labels_of(0, 2)
    # causal: only earlier copies count, so the first-half rows (no earlier copy) drop out
    causal = maps_from(maps.weights, special=maps.special, causal=True)
    np.testing.assert_allclose(duplicate_token_scores(causal, ids)[0], [1.0, 0.0, 0.0], atol=1e-6)
    w = maps.weights.copy()
    w[0, 0, 8, 8 - 6], w[0, 0, 8, 0] = 0.0, 1.0  # one second-half row stops copying
    half = duplicate_token_scores(maps_from(w, special=maps.special, causal=True), ids)[0, 0]
    assert half == pytest.approx(5 / 6)


def test_probe_scores_check_their_input():
    maps, ids = _probe_maps()
    with pytest.raises(ValueError, match="full input ids"):
        induction_scores(maps, ids[1:])
    with pytest.raises(ValueError, match="no query"):
        duplicate_token_scores(maps, np.arange(ids.size))


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 12), st.integers(0, 2**16))
def test_scores_are_in_unit_interval_and_follow_head_permutations(n, seed):
    rng = np.random.default_rng(seed)
    w = random_rows(rng, (2, 4, n, n), sparsity=0.5)
    perm = rng.permutation(4)
    a = classify_heads(maps_from(w, special=(0,)), k=3)
    b = classify_heads(maps_from(w[:, perm], special=(0,)), k=3)
    for name, score in a.scores.items():
        assert np.all((score >= 0) & (score <= 1)), name
        np.testing.assert_allclose(b.scores[name], score[:, perm], atol=1e-6, err_msg=name)
    assert [[b.labels_of(li, h) for h in range(4)] for li in range(2)] == [
        [a.labels_of(li, p) for p in perm] for li in range(2)
    ]
