"""The DERIVED Lipschitz bound against estimates on small layers where it can be checked."""

import numpy as np
import pytest

from attnscope.analysis.lipschitz import (
    lipschitz_bound,
    log_head_term,
    product_norm,
    project_to_ball,
    random_ratios,
    w1_ratio,
)
from attnscope.analysis.markov_kernel import AttentionParams, push_forward


def params(H=1, d=3, D=4, qk=1.0, seed=0, bias=1.0):
    r = np.random.default_rng(seed)
    return AttentionParams(
        w_q=r.standard_normal((H, d, D)) * qk,
        b_q=r.standard_normal((H, d)) * bias,
        w_k=r.standard_normal((H, d, D)) * qk,
        b_k=r.standard_normal((H, d)) * bias,
        w_v=r.standard_normal((H, d, D)),
        b_v=r.standard_normal((H, d)) * bias,
        w_o=r.standard_normal((H, D, d)),
        b_o=r.standard_normal(D) * bias,
    )


def test_bias_free_bound_is_the_methods_formula():
    p = params(bias=0.0)
    R = 1.7
    a = np.linalg.norm(p.w_q[0].T @ p.w_k[0] / np.sqrt(3), 2)
    w = np.linalg.norm(p.w_o[0] @ p.w_v[0], 2)
    methods = w * (R**2 * a + (1 + 2 * R**2 * a) * np.exp(2 * R**2 * a))
    b = lipschitz_bound(p, R)
    assert b.log10_bound == pytest.approx(np.log10(methods), rel=1e-12)
    assert b.log10_bound_without_bias == pytest.approx(b.log10_bound, rel=1e-12)
    assert lipschitz_bound(p, R, residual=True).log10_bound == pytest.approx(np.log10(methods + 1), rel=1e-12)


def test_uniform_attention_bound_is_tight_and_reached_by_a_translation():
    """A = 0, c = 0: Phi(mu) = delta at W mean(mu) + b, so the best constant is ||W||."""
    p0 = params(bias=0.0)
    p = AttentionParams(0 * p0.w_q, 0 * p0.b_q, 0 * p0.w_k, 0 * p0.b_k, p0.w_v, p0.b_v, p0.w_o, p0.b_o)
    W = p.w_o[0] @ p.w_v[0]
    b = lipschitz_bound(p, radius=3.0)
    assert 10**b.log10_bound == pytest.approx(np.linalg.norm(W, 2), rel=1e-12)
    x = np.random.default_rng(1).standard_normal((6, 4)) * 0.3
    u = np.linalg.svd(W)[2][0]
    ratio = w1_ratio(push_forward(p, x), push_forward(p, x + 0.1 * u), x, x + 0.1 * u)
    assert ratio == pytest.approx(10**b.log10_bound, rel=1e-9)


def test_a_query_bias_breaks_the_bias_free_formula_but_not_the_derived_one():
    """A = 0, c large: n atoms at -R e; moving one of them to +R e (W1 = 2R/n) drags the tilted
    mean (hence every output atom) most of the way to +R e: ratio about n."""
    D, n, R = 2, 8, 1.0
    e = np.array([1.0, 0.0])
    p = AttentionParams(
        w_q=np.zeros((1, 2, D)),
        b_q=np.array([[3.0, 0.0]]),
        w_k=np.array([[[1.0, 0.0], [0.0, 0.0]]]) * np.sqrt(2),
        b_k=np.zeros((1, 2)),
        w_v=np.eye(2)[None],
        b_v=np.zeros((1, 2)),
        w_o=np.eye(2)[None],
        b_o=np.zeros(D),
    )
    assert np.allclose(p.bilinear, 0) and np.allclose(p.key_bias, [[3.0, 0.0]])
    x = np.vstack([-R * e] * n)
    y = x.copy()
    y[0] = R * e
    ratio = w1_ratio(push_forward(p, x), push_forward(p, y), x, y)
    b = lipschitz_bound(p, R)
    assert 10**b.log10_bound_without_bias == pytest.approx(1.0)  # ||W_O W_V|| = 1
    assert ratio > 0.9 * n > 10**b.log10_bound_without_bias
    assert ratio <= 10**b.log10_bound


@pytest.mark.parametrize("seed", range(4))
def test_random_estimates_never_exceed_the_bound_on_small_layers(seed):
    p = params(H=2, qk=0.5, seed=seed)
    x = np.random.default_rng(seed + 10).standard_normal((7, 4))
    R = float(np.linalg.norm(x, axis=1).max())
    recs = random_ratios(lambda z: push_forward(p, z), x, R, n_draws=6, seed=seed)
    assert len(recs) == 4 * 2 * 6
    best = max(r["ratio"] for r in recs)
    assert 0 < best <= 10 ** lipschitz_bound(p, R).log10_bound


def test_logs_stay_finite_where_the_bound_overflows_float64():
    t = log_head_term(np.array([2.0]), np.array([5.0]), np.array([1.0]), radius=15.0)
    assert np.isfinite(t).all() and t[0] / np.log(10) > 800  # e^(2 kappa) with kappa = 1140


def test_projection_keeps_points_inside_the_ball():
    x = np.array([[3.0, 4.0], [0.1, 0.0]])
    np.testing.assert_allclose(project_to_ball(x, 1.0), [[0.6, 0.8], [0.1, 0.0]])
    with pytest.raises(ValueError, match="radius"):
        lipschitz_bound(params(), 0.0)


def test_thin_product_norm_equals_the_full_svd():
    r = np.random.default_rng(3)
    left, right = r.standard_normal((40, 3)), r.standard_normal((3, 30))
    assert product_norm(left, right) == pytest.approx(np.linalg.norm(left @ right, 2), rel=1e-12)
    p = params(H=3, seed=5)
    b = lipschitz_bound(p, 1.0)
    np.testing.assert_allclose(b.norm_a, [np.linalg.norm(a, 2) for a in p.bilinear], rtol=1e-12)
    np.testing.assert_allclose(b.norm_w, [np.linalg.norm(w, 2) for w in p.value_out], rtol=1e-12)
