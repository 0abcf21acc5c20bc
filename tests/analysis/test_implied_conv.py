import numpy as np
import pytest
from _planted import maps_from, planted_1d, planted_2d, random_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from attnscope.analysis.implied_conv import grid_shift_matrix, implied_convolution, shift_matrix


def test_shift_matrix_convention_is_key_minus_query():
    x = np.arange(1.0, 6.0)
    np.testing.assert_array_equal(shift_matrix(5, -1) @ x, [0, 1, 2, 3, 4])  # previous token
    np.testing.assert_array_equal(shift_matrix(5, 2) @ x, [3, 4, 5, 0, 0])
    g = grid_shift_matrix((2, 3), (1, -1))  # cell (0, 1) -> (1, 0), cell (0, 2) -> (1, 1)
    assert g.shape == (6, 6) and g.sum() == 2 and g[1, 3] == 1 and g[2, 4] == 1


def test_a_fixed_convolution_is_a_correlation_with_its_kernel():
    # the map of a pure 3-tap kernel applied to x equals numpy's zero-padded correlation
    theta = {-1: 0.5, 0: 0.3, 1: 0.2}
    a = sum(v * shift_matrix(7, d) for d, v in theta.items())
    x = np.random.default_rng(0).random(7)
    np.testing.assert_allclose(a @ x, np.correlate(np.pad(x, 1), [0.5, 0.3, 0.2], "valid"))


def test_planted_kernel_gives_exact_coefficients_and_r2_one():
    plants = [{-1: 0.5, 0: 0.2, 1: 0.3}, {-2: 1.0}]
    maps = planted_1d(plants, n=16, special=(0, 15), noise=0.0)
    conv = implied_convolution(maps, k=3)
    offs = list(conv.index.offsets)
    np.testing.assert_allclose(conv.coef[0, 0], [0, 0, 0.5, 0.2, 0.3, 0, 0], atol=1e-6)
    np.testing.assert_allclose(conv.coef[0, 1, offs.index(-2)], 1.0, atol=1e-6)
    # only the special columns (outside the block) carry the border mass: the block is in the span
    np.testing.assert_allclose(conv.r2[0], [1.0, 1.0], atol=1e-5)
    np.testing.assert_allclose(conv.residual[0], [0.0, 0.0], atol=1e-3)
    # kernel: mass per offset averaged over all 14 valid rows (border rows contribute 0)
    count = conv.index.count
    np.testing.assert_allclose(conv.kernel[0, 1, offs.index(-2)], count[offs.index(-2)] / 14, atol=1e-6)
    assert conv.kernel.shape == (1, 2, 7)
    np.testing.assert_allclose(conv.projection(0, 1)[3, 1], 1.0, atol=1e-6)


def test_noise_outside_the_window_lowers_r2_by_its_energy():
    maps = planted_1d([{-1: 0.6}], n=30, special=(0,), k=2, noise=0.4, seed=2)
    conv = implied_convolution(maps, k=2)
    w = maps.weights[0, 0, 1:, 1:].astype(np.float64)
    band = sum(np.diag(w, -1) ** 2)
    np.testing.assert_allclose(conv.r2[0, 0], band / (w**2).sum(), rtol=1e-5)
    assert 0.2 < conv.r2[0, 0] < 0.999


def test_2d_kernel_is_a_patch():
    maps = planted_2d([{(0, 1): 0.7, (1, 0): 0.2}], grid=(5, 5), radius=1)
    conv = implied_convolution(maps, radius=1)
    assert conv.kernel.shape == (1, 1, 3, 3)
    expect = [[0, 0, 0], [0, 0, 0.7], [0, 0.2, 0]]
    np.testing.assert_allclose(conv.coef[0, 0].reshape(3, 3), expect, atol=1e-6)
    # 20 of the 25 cells have a right neighbour; the kernel averages over all 25
    np.testing.assert_allclose(conv.kernel[0, 0, 1, 2], 0.7 * 20 / 25, atol=1e-6)


def _explicit_lstsq(maps, k):
    """Least squares on explicitly built, restricted shift matrices (the slow reference)."""
    keep = np.ones(maps.n_tokens, bool)
    keep[list(maps.special)] = False
    block = np.ix_(keep, keep)
    basis = np.stack([shift_matrix(maps.n_tokens, d)[block].ravel() for d in range(-k, k + 1)], 1)
    out_coef, out_r2 = [], []
    for a in maps.weights.reshape(-1, maps.n_tokens, maps.n_tokens):
        y = a[block].ravel().astype(np.float64)
        coef = np.linalg.lstsq(basis, y, rcond=None)[0]
        fit = basis @ coef
        out_coef.append(coef)
        out_r2.append(fit @ fit / (y @ y) if y @ y > 0 else 0.0)  # empty block: defined as 0
    shape = maps.weights.shape[:2]
    return np.reshape(out_coef, shape + (-1,)), np.reshape(out_r2, shape)


@settings(max_examples=40, deadline=None)
@given(st.integers(4, 12), st.integers(0, 3), st.integers(0, 2**16), st.sampled_from([0.0, 0.6]))
def test_closed_form_equals_explicit_least_squares(n, k, seed, sparsity):
    rng = np.random.default_rng(seed)
    special = (0,) if seed % 2 else (0, n - 1)
    maps = maps_from(random_rows(rng, (2, 2, n, n), sparsity), special=special)
    k = min(k, n - len(special) - 1)
    conv = implied_convolution(maps, k=k)
    coef, r2 = _explicit_lstsq(maps, k)
    np.testing.assert_allclose(conv.coef, coef, atol=1e-5)
    np.testing.assert_allclose(conv.r2, r2, atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 14), st.integers(0, 6), st.integers(0, 2**16))
def test_kernels_sum_to_at_most_one_and_r2_in_unit_interval(n, k, seed):
    rng = np.random.default_rng(seed)
    maps = maps_from(random_rows(rng, (1, 3, n, n), sparsity=0.7), special=(0,) if n > 2 else ())
    conv = implied_convolution(maps, k=k)
    assert np.all(conv.kernel.reshape(1, 3, -1).sum(-1) <= 1 + 1e-5)
    assert np.all(conv.kernel >= 0) and np.all((conv.r2 >= 0) & (conv.r2 <= 1))


def test_coefficients_can_exceed_a_row_sum_while_the_kernel_cannot():
    # rows: 0 -> key 1, 1 -> key 1, 2 -> key 1: per-offset means are 1/2, 1/3, 1/2 (sum 4/3)
    w = np.zeros((1, 1, 3, 3), np.float32)
    w[0, 0, :, 1] = 1
    conv = implied_convolution(maps_from(w), k=1)
    np.testing.assert_allclose(conv.coef[0, 0], [0.5, 1 / 3, 0.5], atol=1e-6)
    assert conv.coef.sum() == pytest.approx(4 / 3, abs=1e-5)
    assert conv.kernel.sum() == pytest.approx(1.0, abs=1e-6)
