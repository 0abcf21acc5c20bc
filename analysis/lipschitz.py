"""Lipschitz constant of self-attention in W1: a DERIVED upper bound and an empirical estimate.

The map (what both the bound and the estimate are about)
--------------------------------------------------------
``Phi(mu) = (F_mu)_# mu`` on measures supported in ``B_R = {||x|| <= R}``, with ``F_mu`` the
attention sublayer of ``attnscope.analysis.markov_kernel``: all heads, the query/key/value biases, the output
projection ``W_O`` and its bias; optionally the residual ``x + F_mu(x)``; never the LayerNorm
(its Lipschitz constant depends on the variance of each token and is not covered).

The bound  [DERIVED: our own derivation, not the paper's theorem; it holds with Q/K/V biases]
------------------------------------------------------------------------------------------------
Assumptions: mu, nu in P(B_R); W1 with the Euclidean cost; scores affine in the key and bilinear
in (query, key) as below; F_mu as above. Per head (dropping h), the softmax only sees
``s(x, y) = x^T A y + c^T y`` with ``A = W_Q^T W_K / sqrt(d)`` and ``c = W_K^T b_Q / sqrt(d)``
(terms in x alone cancel). Let ``m_mu(x) = int y K_mu(x, dy)``, ``beta = R ||A|| + ||c||``
(so ``||A^T x + c|| <= beta`` and ``|s(x, y)| <= kappa := R beta`` on B_R) and ``W = W_O W_V``.
The value and output biases are translations common to Phi(mu) and Phi(nu): W1 ignores them.

1. W1(Phi mu, Phi nu) <= W1((F_mu)#mu, (F_mu)#nu) + W1((F_mu)#nu, (F_nu)#nu)
                      <= Lip_{B_R}(F_mu) W1(mu, nu) + sup_{x in B_R} ||F_mu(x) - F_nu(x)||.
2. d m_mu / dx = Cov_{K_mu(x,.)}(y) A^T (c does not depend on x), and a covariance of a law on B_R
   has norm <= R^2, so Lip(F_mu) <= ||W|| R^2 ||A||  (+1 with the residual).
3. m_mu(x) - m_nu(x) = int (y - m_nu(x)) g(y) (mu - nu)(dy) / Z_mu with g(y) = exp(s(x, y)),
   Z_mu = int g dmu >= e^-kappa. The integrand f(y) = (y - m_nu) g(y) has Jacobian
   g(y) [I + (y - m_nu)(A^T x + c)^T], of norm <= e^kappa (1 + 2 R beta) on B_R (m_nu in B_R), so by
   Kantorovich-Rubinstein ||m_mu(x) - m_nu(x)|| <= (1 + 2 kappa) e^{2 kappa} W1(mu, nu).

Hence, summing the heads (the triangle inequality on F = sum_h W_h m^h + const),

    L = sum_h ||W_O^h W_V^h||_2 [ R^2 ||A_h||_2 + (1 + 2 kappa_h) exp(2 kappa_h) ]  (+1 with residual),
    kappa_h = R^2 ||A_h||_2 + R ||c_h||_2.

Without biases (c = 0) this is the bias-free form (docs/methods/lipschitz.md). With a query bias
the bias-free form is NOT valid: with A = 0, c large, n-1 atoms at -R e and one at +R e, moving that
one atom by 2R (W1 = 2R/n) moves the tilted mean by about 2R: ratio about n > ||W||, which the
bias-free formula (``||W||``) does not allow (tests/analysis/test_lipschitz.py builds this case).

Numbers: for trained layers ``2 kappa`` is in the hundreds, so everything is kept in logs and
reported as ``log10 L``.

The estimate
------------
``L_hat = max W1(Phi mu, Phi mu') / W1(mu, mu')`` over perturbed clouds ``x' = P_R(x + xi)``
(``P_R`` the radial projection onto B_R, so every measure compared lies where the bound holds),
with exact W1 by assignment on both sides. It is a lower bound on the true constant, hence
``L_hat <= L`` must always hold. Random perturbations live here (``random_ratios``, any callable
Phi); the gradient ascent on the ratio needs autograd and lives in ``pipelines/lipschitz.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from attnscope.analysis.markov_kernel import AttentionParams
from attnscope.analysis.wasserstein import w1_uniform

log = logging.getLogger(__name__)
LN10 = np.log(10.0)


@dataclass(frozen=True)
class LipschitzBound:
    """The DERIVED bound for one attention sublayer on B_R (see the module docstring)."""

    log10_bound: float
    log10_per_head: np.ndarray  # [H]: log10 of head h's term
    radius: float
    residual: bool
    norm_a: np.ndarray  # [H] ||A_h||_2
    norm_c: np.ndarray  # [H] ||c_h||_2
    norm_w: np.ndarray  # [H] ||W_O^h W_V^h||_2
    log10_bound_without_bias: float  # the bias-free form (c = 0): NOT valid when b_Q != 0


def log_head_term(norm_w: np.ndarray, norm_a: np.ndarray, norm_c: np.ndarray, radius: float) -> np.ndarray:
    """Natural log of ``||W|| [R^2 ||A|| + (1 + 2 kappa) e^{2 kappa}]`` per head (arrays ``[H]``)."""
    norm_w, norm_a, norm_c = (np.asarray(v, dtype=np.float64) for v in (norm_w, norm_a, norm_c))
    r = float(radius)
    kappa = r * r * norm_a + r * norm_c
    with np.errstate(divide="ignore"):
        lip_term = np.log(r * r * norm_a)  # -inf when A = 0
        log_w = np.log(norm_w)
    return log_w + np.logaddexp(lip_term, np.log1p(2.0 * kappa) + 2.0 * kappa)


def product_norm(left: np.ndarray, right: np.ndarray) -> float:
    """``||left @ right||_2`` for ``left [D, d]``, ``right [d, D']`` with d << D, via two thin QRs:
    ``left = Q1 R1``, ``right^T = Q2 R2`` give ``||left @ right|| = ||R1 R2^T||`` (a d x d SVD)."""
    r1 = np.linalg.qr(left, mode="r")
    r2 = np.linalg.qr(right.T, mode="r")
    return float(np.linalg.norm(r1 @ r2.T, 2))


def lipschitz_bound(p: AttentionParams, radius: float, residual: bool = False) -> LipschitzBound:
    """The DERIVED W1-Lipschitz bound of ``Phi`` on ``P(B_radius)`` for the sublayer ``p``."""
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"radius must be a positive number; got {radius}")
    H, d = p.n_heads, p.head_dim
    norm_a = np.array([product_norm(p.w_q[h].T, p.w_k[h]) for h in range(H)]) / np.sqrt(d)
    norm_c = np.linalg.norm(p.key_bias, axis=-1)
    norm_w = np.array([product_norm(p.w_o[h], p.w_v[h]) for h in range(H)])
    per_head = log_head_term(norm_w, norm_a, norm_c, radius)
    no_bias = log_head_term(norm_w, norm_a, np.zeros_like(norm_c), radius)
    total, total_nb = logsumexp(per_head), logsumexp(no_bias)
    if residual:
        total, total_nb = np.logaddexp(total, 0.0), np.logaddexp(total_nb, 0.0)
    return LipschitzBound(
        log10_bound=float(total / LN10),
        log10_per_head=per_head / LN10,
        radius=float(radius),
        residual=residual,
        norm_a=norm_a,
        norm_c=norm_c,
        norm_w=norm_w,
        log10_bound_without_bias=float(total_nb / LN10),
    )


def project_to_ball(x: np.ndarray, radius: float) -> np.ndarray:
    """Radial projection of every row of ``x [n, D]`` onto ``B_radius``."""
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def w1_ratio(phi_x: np.ndarray, phi_y: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """``W1(Phi mu, Phi nu) / W1(mu, nu)`` with exact assignment W1 (``nan`` when ``mu == nu``)."""
    den = w1_uniform(x, y)
    if den < 1e-12:
        return float("nan")
    return w1_uniform(phi_x, phi_y) / den


def random_ratios(
    phi: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    radius: float,
    eps: Sequence[float] = (1e-3, 1e-2, 1e-1, 0.5),
    n_draws: int = 4,
    seed: int = 0,
) -> list[dict]:
    """Ratios for random perturbations of the cloud ``x [n, D]`` (kept inside B_radius).

    Per relative size ``e`` in ``eps``: ``n_draws`` dense perturbations (every token moved by
    ``e * radius`` in a random direction) and ``n_draws`` single-token ones. ``phi`` maps a cloud
    ``[n, D]`` to ``Phi``'s atoms ``[n, D]``. Returns records ``{kind, eps, ratio, w1_in, w1_out}``.
    """
    rng = np.random.default_rng(seed)
    x = project_to_ball(np.asarray(x, dtype=np.float64), radius)
    phi_x = phi(x)
    out = []
    for e in eps:
        for kind in ("dense", "single"):
            for _ in range(n_draws):
                xi = rng.standard_normal(x.shape)
                if kind == "single":
                    keep = np.zeros((x.shape[0], 1))
                    keep[rng.integers(x.shape[0])] = 1.0
                    xi *= keep
                xi *= e * radius / np.maximum(np.linalg.norm(xi, axis=-1, keepdims=True), 1e-300)
                xp = project_to_ball(x + xi, radius)
                w_in = w1_uniform(x, xp)
                if w_in < 1e-12:
                    continue
                w_out = w1_uniform(phi_x, phi(xp))
                out.append({"kind": kind, "eps": float(e), "ratio": w_out / w_in, "w1_in": w_in, "w1_out": w_out})
    return out
