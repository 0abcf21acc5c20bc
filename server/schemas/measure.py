"""Schemas of the measure-theoretic view (docs/methods/markov-kernel.md, docs/methods/lipschitz.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

BOUND_STATUS = (
    "DERIVED (our own derivation, not the paper's theorem; it holds with Q/K/V biases, see "
    "docs/methods/lipschitz.md). "
    "Assumptions: token measures supported in the ball B_R (R measured on the data: the largest token "
    "norm), W1 with the Euclidean cost, the map Phi(mu) = (F_mu)#mu with F_mu the attention sublayer "
    "(all heads, Q/K/V biases, W_O and its bias, residual only if asked; no LayerNorm)."
)


class MeasurePublic(BaseModel):
    """W1 profile of a run's token measures and the maximum-entropy check of its attention."""

    run_id: str
    model: str
    n_tokens: int
    w1_successive: list[float] = Field(..., description="[layer]: W1(mu_l, mu_{l+1}) between successive hidden states")
    max_entropy_deviation: list[float] | None = Field(
        None, description="[layer]: max |p - attention| with p the maximum-entropy row solved anew from the scores"
    )
    max_entropy_note: str = ""
    compare_run_id: str | None = None
    w1_between: list[float] | None = Field(
        None, description="[layer + 1]: W1 between this run's and the compared run's token measures at each depth"
    )


class LipschitzPublic(BaseModel):
    """DERIVED upper bound and empirical estimate of one attention layer's W1-Lipschitz constant."""

    model: str
    layer: int
    n_tokens: int
    radius: float = Field(..., description="R: the largest token norm of the layer's input")
    residual: bool
    log10_bound: float = Field(..., description="log10 L (L itself overflows float64 for real layers)")
    log10_bound_per_head: list[float]
    log10_bound_without_bias: float = Field(
        ..., description="the bias-free form of the bound (query bias ignored): not valid when the layer has one"
    )
    estimate: float = Field(..., description="L_hat: the largest W1 ratio found (a lower bound on the true L)")
    log10_estimate: float
    log10_ratio: float = Field(..., description="log10(L_hat / L); must be <= 0")
    best_random: float
    best_ascent: float
    n_evaluations: int
    seconds: float
    bound_status: str = BOUND_STATUS


class ParticlesPublic(BaseModel):
    """Tokens as particles: every depth's hidden states projected by ONE PCA fitted on all depths."""

    run_id: str
    model: str
    tokens: list[str]
    dims: int
    depth_labels: list[str] = Field(..., description="[layer + 1]: 'embeddings', 'after layer 0', ...")
    coords: list[list[list[float]]] = Field(..., description="[layer + 1][token][dims]")
    explained_variance: list[float]
    w1_successive: list[float]


BLOCK_BOUND_STATUS = (
    "DERIVED (our own derivation; analysis/block_bound.py). The HA block's keys are fixed by the first pass "
    "and tied to positions, so it is bounded as a map on clouds with identities, in d_inf(X, Y) = max_i "
    "||x_i - y_i|| (which dominates W1). Assumptions: the block as trained (pre-LN, both residuals, exact "
    "GELU or ReLU, eval mode), keys and positional biases fixed; L(X, Y) = (1 + l1 A)(1 + l2 F) with "
    "l = ||gamma||_inf / min token sigma of the pair (sigma = sqrt(eps) for the global bound). Both factors "
    "are >= 1: a residual block can never be certified a contraction this way."
)


class BlockBound(BaseModel):
    """The DERIVED fixed-key bound of a shared (HA) block and the contraction condition L < 1."""

    metric: str = "d_inf(X, Y) = max_i ||x_i - y_i||_2 (dominates W1)"
    log10_global_bound: float = Field(..., description="log10 L valid for every pair of clouds (LayerNorm eps floor)")
    ln1_factor: float = Field(..., description="l1 = ||gamma_1||_inf / sqrt(eps) in the global bound")
    attention_factor: float = Field(..., description="A = sum_h ||W_O^h W_V^h|| (1 + rho r_h)")
    ln2_factor: float
    ffn_factor: float = Field(..., description="F = ||W2|| max|act'| ||W1||")
    contraction: bool = Field(..., description="the global L < 1 (Banach): a unique fixed cloud")
    log10_orbit_bound: list[float] = Field(
        ..., description="[step]: log10 L(x_t, x_{t+1}) with the pair's own LayerNorm floors"
    )
    orbit_step_ratio: list[float | None] = Field(
        ..., description="[step]: observed d_inf(x_{t+2}, x_{t+1}) / d_inf(x_{t+1}, x_t); must stay below the bound"
    )
    orbit_worst_slack: float | None = Field(
        None, description="max over steps of log10(observed / bound); must be <= 0 (None: too few steps)"
    )
    estimate: float = Field(
        ...,
        description="L_hat around x_0: the largest d_inf ratio over random and "
        "gradient-ascent perturbations (a lower bound on the true constant there)",
    )
    log10_bound_at_estimate: float = Field(..., description="the pairwise bound of the pair that gave L_hat")
    estimate_worst_slack: float = Field(
        ..., description="max over the perturbed pairs of log10(ratio / pair bound); <= 0"
    )
    status: str = BLOCK_BOUND_STATUS


class FixedPointPublic(BaseModel):
    """A block iterated past its trained depth: W1 between successive iterates."""

    run_id: str
    model: str
    block: str
    demonstration: bool
    trained_depth: int
    start_depth: int
    n_steps: int
    w1_steps: list[float] = Field(..., description="[step]: W1(mu_{t+1}, mu_t)")
    rate: float | None = Field(
        None, description="median ratio of successive W1 over the second half (None if undefined)"
    )
    converged: bool
    orbit_radius: float
    log10_bound_attention: float | None = Field(
        None, description="DERIVED bound of the block's attention sublayer with residual on the orbit's ball"
    )
    attention_contraction: bool | None = Field(
        None,
        description="log10_bound_attention < 0: the contraction condition for the attention sublayer; "
        "the block's FFN and LayerNorms are not bounded",
    )
    behaviour: Literal["converges", "drifts", "diverges", "undecided"] = Field(
        ...,
        description="from the W1 steps: converges (to a fixed point), drifts (constant step: no fixed point), "
        "diverges, undecided",
    )
    drift: float | None = Field(None, description="the constant W1 step of a drifting orbit")
    w1_normalised_steps: list[float] = Field(
        ...,
        description="[step]: W1 between successive STANDARDISED clouds (each token centred, unit variance: "
        "what a LayerNorm sees)",
    )
    normalised_order: float | None = Field(
        None, description="p in w1_normalised_steps[t] ~ t^-p, fitted on the second half"
    )
    block_bound: BlockBound | None = Field(
        None, description="the DERIVED fixed-key bound and contraction condition of a shared (HA) block"
    )
