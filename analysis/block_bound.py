"""Lipschitz bound of a pre-LN block with FIXED keys (Hierarchical Attention's shared block) and the
contraction condition for iterating it past its trained depth.   [DERIVED: our own derivation]

Why the measure bound of ``attnscope.analysis.lipschitz`` does not apply
--------------------------------------------------------------
HA computes the keys once, from the first pass, and every later pass reuses them; keys (and the
positional biases) are tied to token POSITIONS. The block is then not a map on token measures (a
permutation of the tokens changes the output): it is a map ``T`` on clouds with identities
``X = (x_1, ..., x_n)``. We bound it in the max-over-tokens metric

    d_inf(X, Y) = max_i ||x_i - y_i||_2,

which dominates W1 of the two token measures (the identity coupling is one coupling):
``W1(mu_X, mu_Y) <= (1/n) sum_i ||x_i - y_i|| <= d_inf(X, Y)``. So if ``L < 1`` (Banach), ``T`` has
a unique fixed cloud and ``W1(mu_{t+1}, mu_t) <= d_inf(x_{t+1}, x_t) <= L^t d_inf(x_1, x_0)``.

The block (``attnscope.models.zoo.attention.Block``, pre-LN): ``T = T2 o T1`` with
``T1(x) = x + Attn(LN1(x))`` and ``T2(x) = x + FFN(LN2(x))``, tokens updated row-wise. With the keys
fixed, head h's scores for query i depend on that query's own (normalised) token only:

    Attn(u)_i = sum_h W^h sum_j p^h_ij(u_i) u_j + const,   W^h = W_O^h W_V^h,
    p^h_i.(u_i) = softmax_j s^h_ij(u_i)   (keys, positional biases, masks: constants).

Lemma 1 (LayerNorm, pairwise). ``LN(a) = gamma * P a / sigma(a) + beta`` with ``P`` the centring
projection and ``sigma(a) = sqrt(Var(a) + eps)``. For any a, b:
``||LN(a) - LN(b)|| <= ||gamma||_inf ||a - b|| / min(sigma(a), sigma(b))``.
Proof: lift ``a -> a^ = (P a, sqrt(D eps))`` in R^{D+1}; ``P a / sigma(a) = sqrt(D) [a^/||a^||]_{1..D}``
and ``||a^|| = sqrt(D) sigma(a)``. Radial projection onto the sphere of radius r is 1-Lipschitz
outside it, so ``||a^/|a^| - b^/|b^|| <= ||a^ - b^|| / min(|a^|, |b^|)`` and ``||a^ - b^|| =
||P(a - b)|| <= ||a - b||``. Every output lies in the ball ``B(beta, rho)``, ``rho = ||gamma||_inf sqrt(D)``.
Since ``sigma >= sqrt(eps)`` always, ``||gamma||_inf / sqrt(eps)`` is a global constant (huge).

Lemma 2 (attention with fixed keys, on LN outputs u, u' in B(beta, rho)^n). For every token i,
``||Attn(u)_i - Attn(u')_i|| <= sum_h ||W^h||_2 (1 + rho r_h) d_inf(u, u')`` where ``r_h`` bounds
the spread of the score gradients: ``||grad_u s^h_ij - c_h|| <= r_h`` for all j and some centre c_h.
Proof: ``m_i(u) - m_i(u') = sum_j p_ij(u_i)(w_j - w'_j) + sum_j (p_ij(u_i) - p_ij(u'_i)) w'_j`` with
``w_j = W^h u_j``. The first term is at most ``||W^h|| d_inf``. Along the segment from u'_i to u_i
(inside the convex ball) the Jacobian of the second is ``sum_j p_j (w'_j - c)(g_j - g_bar)^T`` for any
c (sum_j p_j (g_j - g_bar) = 0), ``g_j = grad s_ij``; for a unit z, Cauchy-Schwarz gives
``<= max_j ||w'_j - c|| sqrt(sum_j p_j ((g_j - g_bar) . z)^2) <= ||W^h|| rho r_h`` (centre
``c = W^h beta``; the variance is at most the second moment about c_h).
- content heads (``s_ij = (W_Q u_i + b_Q) . k_j / sqrt(d) + bias_ij``, k_j fixed): ``g_j = a_j =
  W_Q^T k_j / sqrt(d)``, constant: ``r_h = max_j ||a_j - mean_j a_j||`` (``content_score_radius``);
- SAN pairwise (``s_ij = gamma_h([phi(u_i) - psi_j, p_ij])``, psi fixed, gamma a ReLU MLP):
  ``||g_j|| <= ||G2_h|| ||G1[:, :R]|| ||W_phi||`` with centre 0 (``mlp_score_radius``);
- position-only heads: ``r_h = 0`` (the map does not move).

Lemma 3 (FFN). ``||W2 act(W1 a + b1) - W2 act(W1 b + b1)|| <= ||W2|| g ||W1|| ||a - b||`` with
``g = max |act'|``; for the exact GELU ``g = Phi(sqrt 2) + sqrt 2 phi(sqrt 2) ~ 1.1289``.

Theorem (pairwise). For clouds X, Y:  ``d_inf(T X, T Y) <= L(X, Y) d_inf(X, Y)`` with

    L = (1 + l1 A)(1 + l2 F),   A = sum_h ||W^h|| (1 + rho r_h),   F = ||W2|| g ||W1||,
    l1 = ||gamma_1||_inf / sigma1,  sigma1 = min over the tokens of X and Y of sigma(x_i),
    l2 = ||gamma_2||_inf / sigma2,  sigma2 = the same over the tokens of T1 X and T1 Y.

With ``sigma = sqrt(eps)`` it is a global bound (valid for every pair of clouds).

The contraction condition is ``L < 1``. Both factors are at least 1, so for a block with both residual
connections a norm bound of this kind can NEVER certify a contraction: ``x + F(x)`` has a fixed point
only where ``F(x*) = 0``, which nothing in the block enforces. Along an orbit, the tokens' spread
sigma grows (the residual stream accumulates), so ``L(x_t, x_{t+1}) -> 1`` from above: the bound says
the iteration becomes non-expansive, not contracting. The product reports both, and the observed
step ratios ``d_inf(x_{t+2}, x_{t+1}) / d_inf(x_{t+1}, x_t)``, which must stay below ``L(x_t, x_{t+1})``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm as _gauss

LN10 = np.log(10.0)
#: max |GELU'(x)| over x (attained at x = sqrt 2): the Lipschitz constant of the exact GELU
GELU_LIPSCHITZ = float(_gauss.cdf(np.sqrt(2.0)) + np.sqrt(2.0) * _gauss.pdf(np.sqrt(2.0)))
RELU_LIPSCHITZ = 1.0

__all__ = [
    "FixedKeyBlock",
    "BlockBound",
    "OrbitCheck",
    "GELU_LIPSCHITZ",
    "RELU_LIPSCHITZ",
    "d_inf",
    "token_sigma",
    "content_score_radius",
    "mlp_score_radius",
    "block_bound",
    "global_bound",
    "orbit_check",
]


@dataclass(frozen=True)
class FixedKeyBlock:
    """What the bound needs from one pre-LN block with fixed keys (float64 numpy).

    ln1_gamma, ln2_gamma: ``[D]``; ln1_eps, ln2_eps: the LayerNorms' eps.
    head_norms: ``[H]`` ``||W_O^h W_V^h||_2``. score_radius: ``[H]`` ``r_h`` of Lemma 2.
    ffn_norm: ``||W2||_2 * act_lipschitz * ||W1||_2``.
    """

    ln1_gamma: np.ndarray
    ln1_eps: float
    ln2_gamma: np.ndarray
    ln2_eps: float
    head_norms: np.ndarray
    score_radius: np.ndarray
    ffn_norm: float

    @property
    def rho(self) -> float:
        """Radius of the ball around beta_1 that holds every LN1 output: ``||gamma_1||_inf sqrt(D)``."""
        return float(np.abs(self.ln1_gamma).max() * np.sqrt(self.ln1_gamma.shape[0]))

    @property
    def attention_factor(self) -> float:
        """``A = sum_h ||W^h|| (1 + rho r_h)``: Lipschitz constant of Attn in d_inf on LN outputs."""
        return float(np.sum(self.head_norms * (1.0 + self.rho * self.score_radius)))


@dataclass(frozen=True)
class BlockBound:
    """``L = (1 + l1 A)(1 + l2 F)`` for one pair of sigma floors (see the module docstring)."""

    log10_bound: float
    sigma1: float
    sigma2: float
    ln1_factor: float  # l1
    attention_factor: float  # A
    ln2_factor: float  # l2
    ffn_factor: float  # F

    @property
    def contraction(self) -> bool:
        return self.log10_bound < 0


@dataclass(frozen=True)
class OrbitCheck:
    """The bound along an orbit ``x_0, x_1, ...`` against the observed step ratios.

    log10_bound: ``[t]`` log10 L(x_t, x_{t+1}); observed: ``[t]`` d_inf(x_{t+2}, x_{t+1}) / d_inf(x_{t+1}, x_t)
    (nan where the denominator is 0); steps: ``[t + 1]`` d_inf(x_{t+1}, x_t).
    """

    log10_bound: np.ndarray
    observed: np.ndarray
    steps: np.ndarray

    @property
    def worst_slack(self) -> float:
        """``max_t log10(observed_t / L_t)``: must be <= 0 (above 0 is a bug in the bound or the model)."""
        ok = np.isfinite(self.observed) & (self.observed > 0)
        if not ok.any():
            return float("-inf")
        return float(np.max(np.log10(self.observed[ok]) - self.log10_bound[ok]))


def d_inf(x: np.ndarray, y: np.ndarray) -> float:
    """``max_i ||x_i - y_i||`` for clouds ``[token, dim]`` with the same tokens (dominates W1)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"clouds must have the same shape; got {x.shape} and {y.shape}")
    return float(np.linalg.norm(x - y, axis=-1).max())


def token_sigma(x: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm's denominator per token, ``sqrt(Var(x_i) + eps)`` (biased variance): ``[..., token]``."""
    return np.sqrt(np.var(np.asarray(x, dtype=np.float64), axis=-1) + eps)


def content_score_radius(w_q: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``r_h = max_j ||a_j - mean_j a_j||`` with ``a_j = W_Q^hT k_j / sqrt(d)``.

    Args:
        w_q: ``[H, d, D]`` (query = W_Q^h u + b_Q^h). keys: ``[H, N, d]`` the fixed keys.
    Returns ``[H]``.
    """
    d = w_q.shape[1]
    a = np.einsum("hnd,hdD->hnD", keys, w_q) / np.sqrt(d)  # [H, N, D]
    return np.linalg.norm(a - a.mean(axis=1, keepdims=True), axis=-1).max(axis=1)


def mlp_score_radius(
    w_phi: np.ndarray, g1_rel: np.ndarray, g2: np.ndarray, act_lipschitz: float = RELU_LIPSCHITZ
) -> np.ndarray:
    """``r_h = ||G2_h|| act' ||G1[:, :R]|| ||W_phi||`` for ``s_ij = G2 act(G1 [phi(u_i) - psi_j, p] + b1) + b2``.

    Args:
        w_phi: ``[R, D]``; g1_rel: ``[M, R]`` (the columns of G1 that see ``phi(u_i) - psi_j``);
        g2: ``[H, M]``. Returns ``[H]`` (centre 0: a bound on every ``||grad s_ij||``).
    """
    inner = np.linalg.norm(g1_rel, 2) * np.linalg.norm(w_phi, 2) * act_lipschitz
    return np.linalg.norm(g2, axis=1) * inner


def block_bound(block: FixedKeyBlock, sigma1: float, sigma2: float) -> BlockBound:
    """The Theorem's ``L`` for LN floors ``sigma1`` (LN1 inputs) and ``sigma2`` (LN2 inputs).

    ``sigma = sqrt(eps)`` gives the global bound."""
    for name, s, eps in (("sigma1", sigma1, block.ln1_eps), ("sigma2", sigma2, block.ln2_eps)):
        if not np.isfinite(s) or s < np.sqrt(eps) * (1 - 1e-9):
            raise ValueError(f"{name} must be at least sqrt(eps) = {np.sqrt(eps):.3g}; got {s}")
    l1 = float(np.abs(block.ln1_gamma).max() / sigma1)
    l2 = float(np.abs(block.ln2_gamma).max() / sigma2)
    a, f = block.attention_factor, float(block.ffn_norm)
    log_l = np.log1p(l1 * a) + np.log1p(l2 * f)
    return BlockBound(float(log_l / LN10), float(sigma1), float(sigma2), l1, a, l2, f)


def global_bound(block: FixedKeyBlock) -> BlockBound:
    """``L`` valid for every pair of clouds (sigma at its floor sqrt(eps))."""
    return block_bound(block, float(np.sqrt(block.ln1_eps)), float(np.sqrt(block.ln2_eps)))


def orbit_check(block: FixedKeyBlock, xs: np.ndarray, mids: np.ndarray) -> OrbitCheck:
    """The pairwise bound along an orbit against what the orbit did.

    Args:
        xs: ``[t + 1, token, dim]`` iterates ``x_0 .. x_t`` of ``T``; mids: ``[t + 1, token, dim]``
            ``T1(x_s)`` (the LN2 inputs) for the same iterates.
    """
    xs, mids = np.asarray(xs, dtype=np.float64), np.asarray(mids, dtype=np.float64)
    if xs.shape != mids.shape or xs.ndim != 3 or xs.shape[0] < 2:
        raise ValueError(f"need at least 2 iterates and mids of the same shape; got {xs.shape} and {mids.shape}")
    s1 = token_sigma(xs, block.ln1_eps).min(axis=-1)  # [t + 1]
    s2 = token_sigma(mids, block.ln2_eps).min(axis=-1)
    pairs = xs.shape[0] - 1
    bound = np.array(
        [block_bound(block, min(s1[t], s1[t + 1]), min(s2[t], s2[t + 1])).log10_bound for t in range(pairs)]
    )
    steps = np.linalg.norm(xs[1:] - xs[:-1], axis=-1).max(axis=-1)  # [pairs]
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.where(steps[:-1] > 0, steps[1:] / steps[:-1], np.nan)
    return OrbitCheck(bound[:-1], observed, steps)
