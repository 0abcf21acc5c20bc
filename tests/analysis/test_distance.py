import numpy as np
import pytest
from _planted import maps_from, planted_1d, planted_2d, random_rows

from attnscope.analysis.distance import attention_distance


def test_shift_heads_have_their_offset_as_distance():
    maps = planted_1d([{-1: 1.0}, {3: 0.6}, {0: 1.0}], n=20, special=(0,), k=8)
    d = attention_distance(maps)
    # mass on [CLS] is left out, so each head's remaining mass sits exactly |offset| away
    np.testing.assert_allclose(d.per_head[0], [1.0, 3.0, 0.0], atol=1e-5)
    assert d.unit == "tokens" and d.per_layer[0] == pytest.approx(4 / 3, abs=1e-5)


def test_grid_distance_is_euclidean():
    maps = planted_2d([{(1, 1): 0.9}, {(0, -2): 0.5}], grid=(5, 5), radius=2)
    d = attention_distance(maps)
    np.testing.assert_allclose(d.per_head[0], [np.sqrt(2), 2.0], atol=1e-5)
    assert d.unit == "grid cells"


def test_uniform_rows_by_hand():
    # 3 tokens, uniform: distances |k - q| sum to 0+1+2 + 1+0+1 + 2+1+0 = 8, each weighted 1/3,
    # over a total mass of 3 rows: 8/9
    d = attention_distance(maps_from(np.full((1, 1, 3, 3), 1 / 3, np.float32)))
    assert d.per_head[0, 0] == pytest.approx(8 / 9, abs=1e-6)


def test_permuting_heads_permutes_distances():
    rng = np.random.default_rng(4)
    w = random_rows(rng, (2, 5, 9, 9), sparsity=0.4)
    perm = rng.permutation(5)
    a = attention_distance(maps_from(w, special=(0, 8))).per_head
    b = attention_distance(maps_from(w[:, perm], special=(0, 8))).per_head
    np.testing.assert_allclose(b, a[:, perm], atol=1e-6)
