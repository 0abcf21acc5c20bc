"""W1, max-entropy check, joint PCA and fixed-point iteration on closed-form cases."""

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from attnscope.analysis.measure import (
    fixed_point_iteration,
    joint_pca,
    max_entropy_check,
    w1,
    w1_between_inputs,
    w1_successive,
    w1_uniform,
)

rng = np.random.default_rng(0)


def cloud(n=12, d=5, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def test_w1_of_a_shifted_cloud_is_the_shift():
    x, v = cloud(), np.array([0.3, -1.2, 0.0, 2.0, 0.5])
    assert w1_uniform(x, x + v) == pytest.approx(np.linalg.norm(v), rel=1e-12)
    n = x.shape[0]
    # the general (POT) path, forced with explicit weights, agrees
    assert w1(x, x + v, np.full(n, 1 / n), np.full(n, 1 / n)) == pytest.approx(np.linalg.norm(v), rel=1e-9)


def test_identical_and_permuted_measures_are_at_distance_zero():
    x = cloud()
    assert w1_uniform(x, x) == 0.0
    value, sigma = w1_uniform(x, x[::-1], return_assignment=True)
    assert value == pytest.approx(0.0, abs=1e-12)
    assert np.array_equal(sigma, np.arange(len(x))[::-1])


def test_two_diracs_and_scaling():
    a, b = np.array([[1.0, 2.0]]), np.array([[4.0, 6.0]])
    assert w1_uniform(a, b) == pytest.approx(5.0)
    x, y = cloud(seed=1), cloud(seed=2)
    assert w1_uniform(3.0 * x, 3.0 * y) == pytest.approx(3.0 * w1_uniform(x, y), rel=1e-12)


def test_unequal_sizes_match_the_one_dimensional_formula():
    x, y = rng.standard_normal(7), rng.standard_normal(11) + 0.4
    assert w1(x[:, None], y[:, None]) == pytest.approx(wasserstein_distance(x, y), rel=1e-9)


def test_repeating_atoms_does_not_change_the_measure():
    x = cloud(4)
    assert w1(x, np.concatenate([x, x])) == pytest.approx(0.0, abs=1e-12)


def test_w1_is_a_metric_on_random_clouds():
    x, y, z = cloud(seed=3), cloud(seed=4), cloud(seed=5)
    assert w1_uniform(x, z) <= w1_uniform(x, y) + w1_uniform(y, z) + 1e-12
    assert w1_uniform(x, y) == pytest.approx(w1_uniform(y, x), rel=1e-12)


def test_profile_of_shifted_layers_is_the_list_of_shifts():
    x = cloud()
    shifts = [np.array([1.0, 0, 0, 0, 0]), np.array([0, 2.0, 0, 0, 0]), np.zeros(5)]
    hs = [x]
    for v in shifts:
        hs.append(hs[-1] + v)
    np.testing.assert_allclose(w1_successive(np.stack(hs)), [1.0, 2.0, 0.0], atol=1e-12)


def test_between_inputs_of_different_lengths():
    a = np.stack([cloud(6), cloud(6) + 1.0])  # [2, 6, 5]
    b = np.stack([np.concatenate([a[0], a[0]])] * 2)  # [2, 12, 5]: a[0]'s measure at both depths
    out = w1_between_inputs(a, b)
    assert out.shape == (2,)
    assert out[0] == pytest.approx(0.0, abs=1e-12)
    assert out[1] == pytest.approx(np.sqrt(5.0), rel=1e-9)  # shifted by (1,...,1)


@pytest.mark.parametrize("bad", [np.zeros((0, 3)), np.full((3, 2), np.nan)])
def test_bad_clouds_are_refused(bad):
    with pytest.raises(ValueError):
        w1_uniform(bad, bad)


def test_unequal_shapes_are_refused_by_the_assignment_solver():
    with pytest.raises(ValueError, match="unequal"):
        w1_uniform(cloud(3), cloud(4))
    with pytest.raises(ValueError, match="dim"):
        w1(cloud(3, 2), cloud(3, 4))


def test_max_entropy_check_is_tiny_for_softmax_and_sees_a_wrong_row():
    s = rng.standard_normal((2, 3, 5, 5)) * 4
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    assert max_entropy_check(s, a).max() < 1e-10
    bad = a.copy()
    bad[1, 2, 0] = np.roll(bad[1, 2, 0], 1)  # not the max-entropy row for its scores
    dev = max_entropy_check(s, bad)
    assert dev[0] < 1e-10 and dev[1] == pytest.approx(np.abs(bad[1, 2, 0] - a[1, 2, 0]).max(), rel=1e-6)


def test_joint_pca_of_points_on_a_line():
    direction = np.array([1.0, 2.0, -2.0]) / 3.0
    t = np.arange(8.0).reshape(2, 4)  # [layer + 1, token]
    hs = t[..., None] * direction + np.array([5.0, 0.0, 1.0])
    coords, ratio = joint_pca(hs, k=2)
    assert coords.shape == (2, 4, 2)
    assert ratio[0] == pytest.approx(1.0) and ratio[1] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(np.abs(coords[..., 0] - coords[0, 0, 0]), t, atol=1e-12)
    with pytest.raises(ValueError):
        joint_pca(hs, k=4)


def test_affine_contraction_converges_at_its_rate():
    a, b = 0.6, np.array([1.0, -2.0])
    x0 = cloud(9, 2)
    res = fixed_point_iteration(lambda x: a * x + b, x0, 40, log10_bound=np.log10(a))
    d0 = w1_uniform(x0, a * x0 + b)
    np.testing.assert_allclose(res.w1_steps, d0 * a ** np.arange(40), rtol=1e-6, atol=1e-12)
    assert res.rate == pytest.approx(a, rel=1e-6) and res.converged and res.contraction
    np.testing.assert_allclose(res.final, np.tile(b / (1 - a), (9, 1)), atol=1e-7)


def test_mean_field_consensus_and_expansion():
    alpha = 0.25
    res = fixed_point_iteration(lambda x: (1 - alpha) * x + alpha * x.mean(0), cloud(), 60)
    assert res.rate == pytest.approx(1 - alpha, rel=1e-6) and res.converged and res.contraction is None
    grow = fixed_point_iteration(lambda x: 1.5 * x, cloud(), 10, log10_bound=np.log10(1.5))
    assert grow.rate == pytest.approx(1.5) and not grow.converged and grow.contraction is False


def test_fixed_point_iteration_refuses_shape_changes_and_nan():
    with pytest.raises(ValueError, match="shape"):
        fixed_point_iteration(lambda x: x[:-1], cloud(), 3)
    with pytest.raises(ValueError, match="NaN"):
        fixed_point_iteration(lambda x: x * np.nan, cloud(), 3)
