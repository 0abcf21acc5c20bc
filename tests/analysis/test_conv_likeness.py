"""Convolution-likeness: Cordonnier's 3x3 construction scores as a convolution, broad or far heads do not
(closed-form cases, and the construction's real maps through the 2D shift scan)."""

import numpy as np
import pytest

from attnscope.analysis.conv_likeness import centre_distance, conv_likeness, in_window
from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.shift import scan_shifts

SPAN = np.arange(-2, 3)
OFFSETS = np.stack(np.meshgrid(SPAN, SPAN, indexing="ij"), -1).reshape(-1, 2)  # 5x5 window, 25 offsets
NEIGHBOURS = [i for i, o in enumerate(OFFSETS) if np.abs(o).max() <= 1]


def test_window_and_distance():
    assert in_window(OFFSETS).sum() == 9 and in_window(OFFSETS, 2).sum() == 25
    assert centre_distance(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist() == [5.0, 0.0]


def test_the_construction_is_a_convolution():
    mass = np.zeros((9, 25))
    mass[np.arange(9), NEIGHBOURS] = 1.0  # head h: all its mass on the h-th 3x3 offset
    c = conv_likeness(mass, OFFSETS, centres=OFFSETS[NEIGHBOURS].astype(float))
    assert (c.distinct_offsets, c.in_neighbourhood, c.covered, c.neighbourhood_size) == (9, 9, 9, 9)
    assert c.neighbourhood_mass == 1.0 and c.best_mass.tolist() == [1.0] * 9
    assert c.centres_in_neighbourhood == 9
    assert c.centre_distance.max() == pytest.approx(np.sqrt(2))


def test_uniform_heads_are_not():
    c = conv_likeness(np.full((9, 25), 1 / 25), OFFSETS)
    assert c.distinct_offsets == 1  # every head ties; argmax takes the first offset, (-2, -2)
    assert c.best_offset[0].tolist() == [-2, -2]
    assert (c.in_neighbourhood, c.covered) == (0, 0)
    assert c.neighbourhood_mass == pytest.approx(1 / 25)


def test_far_and_broad_heads():
    # 4 heads, each half its mass on a far offset (2, h - 2) and half spread over the other 24
    mass = np.full((4, 25), 0.5 / 24)
    far = [i for i, o in enumerate(OFFSETS) if o[0] == 2][:4]
    mass[np.arange(4), far] = 0.5
    c = conv_likeness(mass, OFFSETS, centres=np.array([[2.2, -1.6], [1.6, -0.4], [2.0, 0.0], [0.4, 0.4]]))
    assert c.distinct_offsets == 4 and c.in_neighbourhood == 0 and c.covered == 0
    assert c.neighbourhood_mass == pytest.approx(0.5 / 24)
    # centres round to (2, -2), (2, 0), (2, 0), (0, 0): one inside the 3x3 neighbourhood
    assert c.centres_in_neighbourhood == 1
    assert c.as_dict()["best_mass"] == [0.5] * 4


def test_refuses_a_window_smaller_than_the_neighbourhood():
    with pytest.raises(ValueError, match="whole 3x3"):
        conv_likeness(np.zeros((2, 4)), OFFSETS[:4])
    with pytest.raises(ValueError, match="mass"):
        conv_likeness(np.zeros((2, 25)), OFFSETS[:5])
    with pytest.raises(ValueError, match="centres"):
        conv_likeness(np.zeros((2, 25)), OFFSETS, centres=np.zeros((3, 2)))


def test_construction_maps_through_the_shift_scan():
    """9 heads on a 6x6 grid, head h attending to query + offset h when that cell exists (else to itself):
    the scan gives each head mass 1 at its offset, so the layer is exactly a 3x3 convolution."""
    rows = cols = 6
    n = rows * cols
    w = np.zeros((1, 9, n, n), np.float32)
    for h, (dr, dc) in enumerate(OFFSETS[NEIGHBOURS]):
        for q in range(n):
            r, c = divmod(q, cols)
            inside = 0 <= r + dr < rows and 0 <= c + dc < cols
            w[0, h, q, (r + dr) * cols + c + dc if inside else q] = 1.0
    maps = AttentionMaps(weights=w, tokens=tuple(f"r{q // cols}c{q % cols}" for q in range(n)), grid=(rows, cols))
    scan = scan_shifts(maps, radius=2)
    c = conv_likeness(scan.mass[0], scan.offsets)
    assert (c.distinct_offsets, c.in_neighbourhood, c.covered) == (9, 9, 9)
    assert c.neighbourhood_mass == pytest.approx(1.0)
    assert c.best_offset.tolist() == OFFSETS[NEIGHBOURS].tolist()
