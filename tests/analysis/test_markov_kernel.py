"""Markov-kernel formulation and the maximum-entropy solver, on small known cases."""

import numpy as np
import pytest
from scipy.optimize import minimize

from attnscope.analysis.markov_kernel import (
    AttentionParams,
    field,
    markov_kernel,
    maxent_objective,
    maxent_rows,
    scores,
    softmax_rows,
)


def random_params(H=2, d=3, D=5, scale=1.0, seed=0, bias=True):
    r = np.random.default_rng(seed)
    b = (lambda *s: r.standard_normal(s) * scale) if bias else (lambda *s: np.zeros(s))
    return AttentionParams(
        w_q=r.standard_normal((H, d, D)) * scale,
        b_q=b(H, d),
        w_k=r.standard_normal((H, d, D)) * scale,
        b_k=b(H, d),
        w_v=r.standard_normal((H, d, D)),
        b_v=b(H, d),
        w_o=r.standard_normal((H, D, d)),
        b_o=b(D),
    )


def test_scores_match_a_direct_loop_with_every_bias():
    p = random_params()
    x = np.random.default_rng(1).standard_normal((4, 5))
    s = scores(p, x)
    h, i, j = 1, 2, 3
    q = p.w_q[h] @ x[i] + p.b_q[h]
    k = p.w_k[h] @ x[j] + p.b_k[h]
    assert s[h, i, j] == pytest.approx(q @ k / np.sqrt(3))


def test_only_key_dependent_terms_reach_the_kernel():
    """softmax over keys of the full score == softmax of x^T A y + c^T y (methods: A and c)."""
    p = random_params(seed=2)
    x = np.random.default_rng(3).standard_normal((6, 5))
    reduced = np.einsum("ni,hij,mj->hnm", x, p.bilinear, x) + np.einsum("hj,mj->hm", p.key_bias, x)[:, None]
    np.testing.assert_allclose(markov_kernel(p, x), softmax_rows(reduced), atol=1e-12)


def test_kernel_rows_are_distributions_and_weights_equal_repeated_atoms():
    p = random_params(seed=4)
    x = np.random.default_rng(5).standard_normal((3, 5))
    k = markov_kernel(p, x)
    np.testing.assert_allclose(k.sum(-1), 1.0, atol=1e-12)
    doubled = np.concatenate([x, x[:1]])  # atom 0 twice: weight 2/4
    weighted = field(p, x, x, weights=np.array([0.5, 0.25, 0.25]))
    np.testing.assert_allclose(field(p, x, doubled), weighted, atol=1e-12)


def test_without_query_and_key_the_field_is_the_value_of_the_mean():
    p = random_params(seed=6)
    p0 = AttentionParams(
        np.zeros_like(p.w_q),
        np.zeros_like(p.b_q),
        np.zeros_like(p.w_k),
        np.zeros_like(p.b_k),
        p.w_v,
        p.b_v,
        p.w_o,
        p.b_o,
    )
    x = np.random.default_rng(7).standard_normal((5, 5))
    expected = sum(p.w_o[h] @ (p.w_v[h] @ x.mean(0) + p.b_v[h]) for h in range(2)) + p.b_o
    np.testing.assert_allclose(field(p0, x), np.tile(expected, (5, 1)), atol=1e-12)
    np.testing.assert_allclose(field(p0, x, residual=True), expected + x, atol=1e-12)


def test_bad_shapes_are_refused():
    p = random_params()
    with pytest.raises(ValueError, match="w_o"):
        AttentionParams(p.w_q, p.b_q, p.w_k, p.b_k, p.w_v, p.b_v, p.w_o[:, :, :2], p.b_o)


def _slsqp_row(s):
    """A generic constrained solver that knows nothing of softmax."""
    n = len(s)
    res = minimize(
        lambda p: -maxent_objective(np.clip(p, 0, None), s),
        np.full(n, 1 / n),
        jac=lambda p: -(s - np.log(np.clip(p, 1e-300, None)) - 1),
        bounds=[(1e-15, 1)] * n,
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return res.x


def test_mirror_descent_agrees_with_slsqp_and_the_closed_form():
    s = np.random.default_rng(8).standard_normal((6, 7)) * 3
    p, iters = maxent_rows(s)
    assert iters < 500
    np.testing.assert_allclose(p, softmax_rows(s), atol=1e-10)
    for row in range(6):
        np.testing.assert_allclose(_slsqp_row(s[row]), p[row], atol=2e-5)


def test_the_solution_beats_every_other_point_of_the_simplex():
    s = np.random.default_rng(9).standard_normal(5) * 2
    p, _ = maxent_rows(s)
    others = np.random.default_rng(10).dirichlet(np.ones(5), size=2000)
    assert maxent_objective(p, s) >= maxent_objective(others, s).max()


def test_masked_keys_get_zero_weight():
    s = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 9.0]])
    mask = np.array([[True, True, False], [True, True, False]])
    p, _ = maxent_rows(s, mask=mask)
    np.testing.assert_allclose(p[:, 2], 0.0)
    np.testing.assert_allclose(p[0, :2], softmax_rows(s[0, :2]), atol=1e-10)
    with pytest.raises(ValueError, match="unmasked"):
        maxent_rows(s, mask=np.zeros_like(mask))
