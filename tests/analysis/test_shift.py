import numpy as np
import pytest
from _planted import maps_from, planted_1d, planted_2d, random_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from attnscope.analysis.shift import scan_shifts


def test_exact_shift_matrices_are_recovered_in_1d():
    plants = [{-1: 1.0}, {1: 1.0}, {0: 1.0}, {-3: 1.0}, {5: 0.9}, {-2: 0.6, 2: 0.3}]
    maps = planted_1d(plants, n=20, special=(0, 19), noise=0.0)
    scan = scan_shifts(maps, k=8)
    assert scan.mass.shape == (1, 6, 17)
    assert [scan.offset(b) for b in scan.best[0]] == [-1, 1, 0, -3, 5, -2]
    np.testing.assert_allclose(scan.best_mass[0], [1, 1, 1, 1, 0.9, 0.6], atol=1e-6)
    np.testing.assert_allclose(scan.mass_at(2)[0, 5], 0.3, atol=1e-6)
    assert scan.offset(scan.runner_up[0, 5]) == 2
    np.testing.assert_allclose(scan.shift_score[0], [1, 1, 1, 1, 0.9, 0.3], atol=1e-6)
    assert scan.is_shift[0].tolist() == [True, True, True, True, True, False]
    # every other offset carries nothing: border mass and special rows went elsewhere
    planted = {(0, -1), (1, 1), (2, 0), (3, -3), (4, 5), (5, -2), (5, 2)}
    for h in range(6):
        for i, d in enumerate(scan.offsets):
            if (h, int(d)) not in planted:
                assert scan.mass[0, h, i] == pytest.approx(0.0, abs=1e-6)


def test_noise_and_sink_columns_do_not_move_the_recovered_masses():
    plants = [{-1: 0.55}, {2: 0.3, -2: 0.3}, {4: 0.7}]
    maps = planted_1d(plants, n=40, special=(0, 20, 39), noise=0.2, seed=3)
    scan = scan_shifts(maps, k=8)
    np.testing.assert_allclose(scan.mass_at(-1)[0, 0], 0.55, atol=1e-6)
    np.testing.assert_allclose(scan.mass_at(2)[0, 1], 0.3, atol=1e-6)
    np.testing.assert_allclose(scan.mass_at(-2)[0, 1], 0.3, atol=1e-6)
    np.testing.assert_allclose(scan.mass_at(4)[0, 2], 0.7, atol=1e-6)
    # counts: rows where the offset exists with both ends non-special
    keep = np.ones(40, bool)
    keep[[0, 20, 39]] = False
    for i, d in enumerate(scan.offsets):
        q = np.arange(40)
        ok = (q + d >= 0) & (q + d < 40)
        assert scan.count[i] == int((keep[q[ok]] & keep[q[ok] + d]).sum())


def test_include_special_counts_sink_columns():
    # every row attends to the previous position; with specials included row 1 -> [CLS] counts
    n = 8
    w = np.zeros((1, 1, n, n), np.float32)
    w[0, 0, 0, 0] = 1
    for q in range(1, n):
        w[0, 0, q, q - 1] = 1
    maps = maps_from(w, special=(0, n - 1))
    assert scan_shifts(maps, k=2, include_special=True).mass_at(-1)[0, 0] == pytest.approx(1.0)
    assert scan_shifts(maps, k=2, include_special=True).count[1] == n - 1
    assert scan_shifts(maps, k=2).count[1] == n - 3  # rows 2..6 (row 1's key 0 and row 7 dropped)


def test_exact_shifts_are_recovered_on_a_grid():
    plants = [{(0, -1): 0.95}, {(1, 0): 0.95}, {(-1, 1): 0.8}, {(0, 0): 0.5, (2, -2): 0.4}]
    maps = planted_2d(plants, grid=(6, 7), radius=2, noise=0.05, seed=1)
    scan = scan_shifts(maps, radius=2)
    assert scan.offsets.shape == (25, 2) and scan.mass.shape == (1, 4, 25)
    assert [scan.offset(b) for b in scan.best[0]] == [(0, -1), (1, 0), (-1, 1), (0, 0)]
    np.testing.assert_allclose(scan.best_mass[0], [0.95, 0.95, 0.8, 0.5], atol=1e-6)
    np.testing.assert_allclose(scan.mass_at((2, -2))[0, 3], 0.4, atol=1e-6)
    # rows where (1, 0) exists: all but the last grid row; the CLS row never counts
    assert scan.count[scan.index.position((1, 0))] == 5 * 7
    assert scan.head(0, 1).label == "L0H1" and scan.head(0, 1).offset == (1, 0)


def test_labels_use_original_indices_after_select():
    maps = planted_1d([{0: 1.0}, {-1: 1.0}], n=10)
    sub = maps.select(heads=[1])
    rec = scan_shifts(sub, k=2).shift_heads()
    assert [(r.label, r.offset) for r in rec] == [("L0H1", -1)]


def test_window_wider_than_the_sequence_is_zero_not_nan():
    maps = planted_1d([{-1: 1.0}], n=5, special=(0,))
    scan = scan_shifts(maps, k=8)
    assert np.all(np.isfinite(scan.mass))
    assert scan.count[scan.index.position(8)] == 0 and scan.mass_at(8)[0, 0] == 0


@st.composite
def random_maps(draw):
    n_layer, n_head = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    n = draw(st.integers(2, 12))
    special = tuple(sorted(draw(st.sets(st.integers(0, n - 1), max_size=min(2, n - 1)))))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    w = random_rows(rng, (n_layer, n_head, n, n), sparsity=draw(st.sampled_from([0.0, 0.5, 0.9])))
    return maps_from(w, special=special), rng


@settings(max_examples=60, deadline=None)
@given(random_maps(), st.integers(0, 5))
def test_masses_are_in_unit_interval_and_match_a_direct_loop(data, k):
    maps, _ = data
    scan = scan_shifts(maps, k=k)
    assert np.all((scan.mass >= 0) & (scan.mass <= 1))
    assert np.all(scan.shift_score >= 0) and np.all(scan.best_mass >= scan.runner_up_mass)
    keep = np.ones(maps.n_tokens, bool)
    keep[list(maps.special)] = False
    w = maps.weights.astype(np.float64)
    for i, d in enumerate(scan.offsets):
        rows = [q for q in range(maps.n_tokens) if 0 <= q + d < maps.n_tokens and keep[q] and keep[q + d]]
        expect = np.mean([w[:, :, q, q + d] for q in rows], axis=0) if rows else 0.0
        np.testing.assert_allclose(scan.mass[..., i], expect, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(random_maps())
def test_permuting_heads_permutes_the_scan(data):
    maps, rng = data
    perm = rng.permutation(maps.n_heads)
    a = scan_shifts(maps, k=3)
    b = scan_shifts(maps_from(maps.weights[:, perm], special=maps.special), k=3)
    np.testing.assert_allclose(b.mass, a.mass[:, perm], atol=1e-6)
    np.testing.assert_allclose(b.shift_score, a.shift_score[:, perm], atol=1e-6)
