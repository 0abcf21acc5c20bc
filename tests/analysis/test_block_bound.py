"""The fixed-key block bound's lemmas on closed-form and random cases (numpy reference maps)."""

import numpy as np
import pytest
import torch
from scipy.special import softmax

from attnscope.analysis.block_bound import (
    GELU_LIPSCHITZ,
    FixedKeyBlock,
    block_bound,
    content_score_radius,
    d_inf,
    global_bound,
    mlp_score_radius,
    orbit_check,
    token_sigma,
)
from attnscope.analysis.measure import orbit_behaviour, power_order, standardise
from attnscope.analysis.wasserstein import w1_uniform

EPS = 1e-5


def layer_norm(x, gamma, beta, eps=EPS):
    c = x - x.mean(-1, keepdims=True)
    return gamma * c / np.sqrt((c**2).mean(-1, keepdims=True) + eps) + beta


def fixed_key_attention(u, w_q, b_q, keys, w_v, b_v, w_o, bias):
    """Reference: ``sum_h W_O^h sum_j softmax_j((W_Q^h u_i + b_Q^h).k_j / sqrt d + bias_ij) (W_V^h u_j + b_V^h)``."""
    d = w_q.shape[1]
    out = np.zeros_like(u)
    for h in range(w_q.shape[0]):
        q = u @ w_q[h].T + b_q[h]
        p = softmax(q @ keys[h].T / np.sqrt(d) + bias[h], axis=-1)
        out += (p @ (u @ w_v[h].T + b_v[h])) @ w_o[h].T
    return out


def test_gelu_constant_is_the_largest_slope():
    x = torch.linspace(-6, 6, 200_001, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(torch.nn.functional.gelu(x).sum(), x)
    assert g.abs().max().item() == pytest.approx(GELU_LIPSCHITZ, abs=1e-8)
    assert GELU_LIPSCHITZ == pytest.approx(1.1289, abs=1e-4)


def test_layernorm_lemma_holds_and_is_attained():
    rng = np.random.default_rng(0)
    D = 16
    gamma, beta = rng.uniform(0.2, 2.0, D), rng.standard_normal(D)
    worst = 0.0
    for scale in (1e-3, 1e-1, 1.0, 10.0):
        for _ in range(200):
            a = rng.standard_normal(D) * scale
            b = a + rng.standard_normal(D) * scale * rng.choice([1e-3, 0.1, 1.0])
            bound = np.abs(gamma).max() * np.linalg.norm(a - b) / min(token_sigma(a, EPS), token_sigma(b, EPS))
            ratio = np.linalg.norm(layer_norm(a, gamma, beta) - layer_norm(b, gamma, beta)) / bound
            worst = max(worst, ratio)
    assert worst <= 1 + 1e-9
    # attained: gamma = 1, a small move orthogonal to a and to the ones vector
    a = rng.standard_normal(D) * 3
    delta = rng.standard_normal(D)
    basis = np.stack([np.ones(D), a - a.mean()])
    delta -= basis.T @ np.linalg.lstsq(basis.T, delta, rcond=None)[0]
    delta *= 1e-6 / np.linalg.norm(delta)
    ones = np.ones(D)
    ratio = np.linalg.norm(layer_norm(a + delta, ones, 0) - layer_norm(a, ones, 0)) / np.linalg.norm(delta)
    assert ratio == pytest.approx(1 / token_sigma(a, EPS), rel=1e-5)


def test_every_layernorm_output_lies_in_the_ball_of_radius_rho():
    rng = np.random.default_rng(1)
    gamma = rng.uniform(-2, 2, 24)
    block = FixedKeyBlock(gamma, EPS, gamma, EPS, np.ones(1), np.zeros(1), 0.0)
    u = layer_norm(rng.standard_normal((500, 24)) * rng.uniform(0, 5, (500, 1)), gamma, 0.7)
    assert np.linalg.norm(u - 0.7, axis=-1).max() <= block.rho


def test_fixed_key_attention_lemma_holds_on_random_layers():
    rng = np.random.default_rng(2)
    H, d, D, N = 3, 4, 8, 7
    gamma, beta = rng.uniform(0.5, 1.5, D), rng.standard_normal(D) * 0.3
    for trial in range(6):
        s = 0.5 + trial  # sharper attention in later trials
        w_q, w_v = rng.standard_normal((H, d, D)) * s, rng.standard_normal((H, d, D))
        w_o, b_q, b_v = rng.standard_normal((H, D, d)), rng.standard_normal((H, d)), rng.standard_normal((H, d))
        keys, bias = rng.standard_normal((H, N, d)), rng.standard_normal((H, N, N))
        radius = content_score_radius(w_q, keys)
        norms = np.array([np.linalg.norm(w_o[h] @ w_v[h], 2) for h in range(H)])
        block = FixedKeyBlock(gamma, EPS, gamma, EPS, norms, radius, 0.0)
        lip = block.attention_factor

        def attn(u, w_q=w_q, b_q=b_q, keys=keys, w_v=w_v, b_v=b_v, w_o=w_o, bias=bias):
            return fixed_key_attention(u, w_q, b_q, keys, w_v, b_v, w_o, bias)

        for size in (1e-4, 1e-2, 1.0):
            for single in (False, True):
                x = rng.standard_normal((N, D)) * 2
                xp = x + rng.standard_normal((N, D)) * size * ((np.arange(N) == 0)[:, None] if single else 1)
                u, up = layer_norm(x, gamma, beta), layer_norm(xp, gamma, beta)
                assert d_inf(attn(u), attn(up)) <= lip * d_inf(u, up) * (1 + 1e-9)


def test_fixed_key_attention_bound_is_attained_without_score_gradients():
    """W_Q = 0: uniform attention, Attn(u)_i = W mean_j u_j; moving every token along W's top right
    singular vector gives exactly ||W||, the bound with r = 0."""
    rng = np.random.default_rng(3)
    D, N = 6, 5
    w_v, w_o = rng.standard_normal((1, D, D)), np.eye(D)[None]
    keys = rng.standard_normal((1, N, D))
    radius = content_score_radius(np.zeros((1, D, D)), keys)
    assert radius[0] == 0.0
    norm = np.linalg.norm(w_v[0], 2)
    block = FixedKeyBlock(np.ones(D), EPS, np.ones(D), EPS, np.array([norm]), radius, 0.0)
    top = np.linalg.svd(w_v[0])[2][0]
    u = rng.standard_normal((N, D))

    def attn(u):
        return fixed_key_attention(
            u,
            np.zeros((1, D, D)),
            np.zeros((1, D)),
            keys,
            w_v,
            np.zeros((1, D)),
            w_o,
            np.zeros((1, N, N)),
        )

    ratio = d_inf(attn(u), attn(u + 0.1 * top)) / 0.1
    assert ratio == pytest.approx(block.attention_factor, rel=1e-9)


def test_score_radii_in_closed_form():
    # a_j = W_Q^T k_j / sqrt(d): keys +-e_1 give a_j = +-e_1 / sqrt(d) around a zero mean
    w_q = np.eye(4)[None]
    keys = np.array([[[1.0, 0, 0, 0], [-1.0, 0, 0, 0]]])
    assert content_score_radius(w_q, keys)[0] == pytest.approx(1 / 2)
    w_phi, g1, g2 = 2 * np.eye(3), 3 * np.eye(3), np.array([[4.0, 0, 0], [0, 0, 0.5]])
    np.testing.assert_allclose(mlp_score_radius(w_phi, g1, g2), [24.0, 3.0])


def test_block_bound_is_at_least_one_and_refuses_floors_below_eps():
    rng = np.random.default_rng(4)
    block = FixedKeyBlock(
        rng.uniform(0.5, 1, 8), EPS, rng.uniform(0.5, 1, 8), EPS, rng.uniform(0, 2, 3), rng.uniform(0, 1, 3), 2.0
    )
    g = global_bound(block)
    assert g.sigma1 == pytest.approx(np.sqrt(EPS)) and not g.contraction
    expected = np.log10((1 + g.ln1_factor * block.attention_factor) * (1 + g.ln2_factor * 2.0))
    assert g.log10_bound == pytest.approx(expected)
    assert block_bound(block, 1e3, 1e3).log10_bound > 0  # both residuals: never below 1
    assert block_bound(block, 1.0, 1.0).log10_bound < g.log10_bound
    with pytest.raises(ValueError, match="sqrt\\(eps\\)"):
        block_bound(block, 1e-4, 1.0)


def test_orbit_check_of_a_pure_drift_is_tight():
    """A block with no attention and no FFN weights is the identity: L = 1 exactly, ratio 1."""
    D = 5
    block = FixedKeyBlock(np.ones(D), EPS, np.ones(D), EPS, np.zeros(2), np.zeros(2), 0.0)
    x0 = np.random.default_rng(5).standard_normal((4, D))
    xs = np.stack([x0 + t * np.arange(D) for t in range(6)])
    check = orbit_check(block, xs, xs)
    np.testing.assert_allclose(check.log10_bound, 0.0)
    np.testing.assert_allclose(check.observed, 1.0)
    assert check.worst_slack == pytest.approx(0.0, abs=1e-12)
    assert check.steps.shape == (5,) and check.observed.shape == (4,)
    with pytest.raises(ValueError, match="at least 2 iterates"):
        orbit_check(block, xs[:1], xs[:1])


def test_d_inf_dominates_w1():
    rng = np.random.default_rng(6)
    for _ in range(20):
        x, y = rng.standard_normal((9, 3)), rng.standard_normal((9, 3))
        assert w1_uniform(x, y) <= d_inf(x, y) + 1e-12
    with pytest.raises(ValueError, match="same shape"):
        d_inf(np.zeros((2, 3)), np.zeros((3, 3)))


def test_orbit_behaviour_and_power_order():
    t = np.arange(1, 41)
    assert orbit_behaviour(0.5**t) == ("converges", None)
    label, drift = orbit_behaviour(3.0 + 0.01 * np.sin(t))
    assert label == "drifts" and drift == pytest.approx(3.0, abs=0.02)
    assert orbit_behaviour(1.2**t)[0] == "diverges"
    assert orbit_behaviour(np.array([1.0, 2.0, 1.0]))[0] == "undecided"
    assert power_order(5.0 * t**-1.5) == pytest.approx(1.5, abs=1e-9)
    assert power_order(np.zeros(10)) is None


def test_standardise_centres_and_scales_every_token():
    x = np.random.default_rng(7).standard_normal((6, 10)) * 4 + 2
    z = standardise(x)
    np.testing.assert_allclose(z.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(z.std(-1), 1, atol=1e-12)
    assert np.all(standardise(np.ones((2, 3))) == 0)
