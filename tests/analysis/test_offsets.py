import numpy as np
import pytest
from _planted import maps_from

from attnscope.analysis.offsets import distance_matrix, offset_index, offset_index_1d, offset_index_2d


def _pairs(idx, i):
    flat = idx.flat[idx.starts[i] : idx.starts[i] + idx.count[i]]
    return sorted(zip((flat // idx.n).tolist(), (flat % idx.n).tolist(), strict=True))


def test_1d_pairs_skip_special_rows_and_columns():
    idx = offset_index_1d(6, (0, 5), 2, False)
    assert idx.offsets.tolist() == [-2, -1, 0, 1, 2] and idx.kernel_shape == (5,)
    assert _pairs(idx, idx.position(-1)) == [(2, 1), (3, 2), (4, 3)]
    assert _pairs(idx, idx.position(2)) == [(1, 3), (2, 4)]
    assert idx.rows.tolist() == [1, 2, 3, 4]
    with_special = offset_index_1d(6, (0, 5), 2, True)
    assert _pairs(with_special, with_special.position(-1)) == [(q, q - 1) for q in range(1, 6)]


def test_2d_pairs_stay_inside_the_grid():
    # CLS at 0, then a 2 x 3 grid: cells 1 2 3 / 4 5 6
    idx = offset_index_2d(7, (0,), (2, 3), 1)
    assert idx.offsets.shape == (9, 2) and idx.kernel_shape == (3, 3)
    assert _pairs(idx, idx.position((0, 1))) == [(1, 2), (2, 3), (4, 5), (5, 6)]  # no wrap 3 -> 4
    assert _pairs(idx, idx.position((1, -1))) == [(2, 4), (3, 5)]
    assert idx.label(idx.position((1, -1))) == "(+1,-1)"
    with pytest.raises(KeyError):
        idx.position((2, 0))


def test_grid_maps_get_a_2d_index():
    w = np.full((1, 1, 5, 5), 0.2, np.float32)
    assert offset_index(maps_from(w, special=(0,), grid=(2, 2)), radius=1).is_2d
    assert not offset_index(maps_from(w), k=1).is_2d


def test_distance_matrix_in_tokens_and_grid_cells():
    w = np.full((1, 1, 5, 5), 0.2, np.float32)
    d1 = distance_matrix(maps_from(w, special=(4,)))
    assert d1[0, 3] == 3 and d1[2, 1] == 1 and d1[4].sum() == 0 and d1[:, 4].sum() == 0
    d2 = distance_matrix(maps_from(w, special=(0,), grid=(2, 2)))
    assert d2[1, 4] == pytest.approx(np.sqrt(2)) and d2[1, 2] == 1 and d2[0].sum() == 0
