"""Measure-theoretic view of a run (Vuckovic et al.; docs/methods/markov-kernel.md): pure numpy/scipy.

Tokens are particles: layer l's hidden states ``[token, dim]`` are the atoms of a uniform measure
``mu_l``. This module gathers what the API serves:

- ``w1_successive`` / ``w1_between_inputs`` (from ``attnscope.analysis.wasserstein``): the W1 profile;
- ``max_entropy_check``: every attention row against the maximum-entropy problem solved anew;
- ``joint_pca``: one PCA fitted on every layer's tokens together (the particle view);
- ``fixed_point_iteration``: iterate a shared block and watch W1 between successive iterates.

The Markov-kernel formulation is in ``attnscope.analysis.markov_kernel`` and the Lipschitz bound (DERIVED) and the
empirical estimate in ``attnscope.analysis.lipschitz``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnscope.analysis.markov_kernel import maxent_rows
from attnscope.analysis.wasserstein import w1, w1_between_inputs, w1_successive, w1_uniform

log = logging.getLogger(__name__)

__all__ = [
    "w1",
    "w1_uniform",
    "w1_successive",
    "w1_between_inputs",
    "max_entropy_check",
    "joint_pca",
    "FixedPoint",
    "fixed_point_iteration",
    "orbit_behaviour",
    "power_order",
    "standardise",
]


def max_entropy_check(scores: np.ndarray, attention: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Largest ``|p - a|`` per layer, p the maximum-entropy row recomputed from the scores.

    Args:
        scores: ``[layer, head, query, key]`` scores ``s = QK^T / sqrt(d)`` (pre-softmax, any bias).
        attention: ``[layer, head, query, key]`` the model's own attention rows.
        mask: boolean ``[query, key]`` (or broadcastable), False where a key is masked out.
    Returns:
        ``[layer]`` max deviation (each row solved by ``attnscope.analysis.markov_kernel.maxent_rows``).
    """
    s, a = np.asarray(scores, dtype=np.float64), np.asarray(attention, dtype=np.float64)
    if s.shape != a.shape or s.ndim != 4:
        raise ValueError(f"scores and attention must both be [layer, head, query, key]; got {s.shape} and {a.shape}")
    out = np.empty(s.shape[0])
    for l in range(s.shape[0]):
        p, iters = maxent_rows(s[l], mask=mask)
        out[l] = float(np.abs(p - a[l]).max())
        log.debug("layer %d: max-entropy rows in %d iterations, deviation %.3g", l, iters, out[l])
    return out


def joint_pca(hidden_states: np.ndarray, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Project every layer's tokens with ONE PCA fitted on all layers together.

    One basis for all layers, so a token's motion between layers is motion in the picture.

    Args:
        hidden_states: ``[layer + 1, token, dim]``; k: 2 or 3 components.
    Returns:
        ``(coords [layer + 1, token, k], explained_variance_ratio [k])``.
    """
    hs = np.asarray(hidden_states, dtype=np.float64)
    if hs.ndim != 3:
        raise ValueError(f"hidden_states must be [layer + 1, token, dim]; got shape {hs.shape}")
    if not 1 <= k <= min(hs.shape[0] * hs.shape[1], hs.shape[2]):
        raise ValueError(f"k={k} components is impossible for {hs.shape[0] * hs.shape[1]} points in dim {hs.shape[2]}")
    flat = hs.reshape(-1, hs.shape[2])
    centred = flat - flat.mean(axis=0)
    _, sing, vt = np.linalg.svd(centred, full_matrices=False)
    basis = vt[:k]
    # sign convention: the largest |loading| of each component is positive (stable pictures)
    basis *= np.sign(basis[np.arange(k), np.abs(basis).argmax(axis=1)])[:, None]
    var = sing**2
    ratio = var[:k] / var.sum() if var.sum() > 0 else np.zeros(k)
    return (centred @ basis.T).reshape(hs.shape[0], hs.shape[1], k), ratio


@dataclass(frozen=True)
class FixedPoint:
    """Result of iterating a map on token clouds.

    w1_steps: ``[n_steps]``, entry t is ``W1(mu_{t+1}, mu_t)`` (t = 0: first application).
    w1_normalised: ``[n_steps]``, the same between the STANDARDISED clouds (every token centred and
        scaled to unit variance: what a LayerNorm sees, up to its affine map). A pre-LN residual
        block can drift (the raw cloud moves a constant distance per step) while the measure its
        attention sees converges; this tells the two apart.
    rate: geometric rate of the tail, median of ``w1_steps[t+1] / w1_steps[t]`` over its second half.
    behaviour: ``orbit_behaviour(w1_steps)``: converges / drifts / diverges / undecided.
    drift: the constant step length of a drifting orbit (mean of the last quarter), else None.
    normalised_order: p in ``w1_normalised[t] ~ t^-p`` fitted on the second half (None if undefined).
    converged: whether the last step moved the measure by less than ``rtol * w1_steps[0]`` (or 1e-10).
    contraction: ``L < 1`` for the given bound (None without one): a sufficient condition for a
        unique fixed point with ``W1(mu_{t+1}, mu_t) <= L^t W1(mu_1, mu_0)`` (Banach).
    final: the last iterate ``[token, dim]``; orbit: ``[n_steps + 1, token, dim]`` when kept.
    radius: largest token norm over every iterate (the R a bound on the whole orbit needs).
    """

    w1_steps: np.ndarray
    rate: float
    converged: bool
    contraction: bool | None
    log10_bound: float | None
    final: np.ndarray
    radius: float
    w1_normalised: np.ndarray
    behaviour: str
    drift: float | None
    normalised_order: float | None
    orbit: np.ndarray | None = None


def standardise(x: np.ndarray) -> np.ndarray:
    """Every token centred and scaled to unit variance (``[..., token, dim]``; constant tokens stay 0)."""
    c = x - x.mean(axis=-1, keepdims=True)
    sd = c.std(axis=-1, keepdims=True)
    return c / np.where(sd > 0, sd, 1.0)


def orbit_behaviour(w1_steps: np.ndarray, rtol: float = 1e-6, flat: float = 0.1) -> tuple[str, float | None]:
    """Classify an orbit from ``W1(mu_{t+1}, mu_t)``: ``(label, drift)``.

    - ``converges``: the last step is below ``rtol`` of the first (or 1e-10), or the steps fall
      geometrically (tail rate < 0.95) to under 1% of the first;
    - ``diverges``: the steps grow (tail rate > 1.05, or the last is 10x the first);
    - ``drifts``: the last quarter's steps are nearly constant (relative spread < ``flat``) and not
      small: no fixed point, the cloud moves by ``drift`` per step;
    - ``undecided``: anything else (too few steps, oscillation, slow change).
    """
    w = np.asarray(w1_steps, dtype=np.float64)
    first, last = w[0], w[-1]
    tail = w[w.size // 2 :]
    ratios = tail[1:] / np.where(tail[:-1] > 1e-12, tail[:-1], np.nan) if tail.size > 1 else np.array([])
    ratios = ratios[np.isfinite(ratios)]
    rate = float(np.median(ratios)) if ratios.size else float("nan")
    if last <= max(rtol * first, 1e-10) or (rate < 0.95 and last < 1e-2 * first):
        return "converges", None
    if rate > 1.05 or last > 10 * first:
        return "diverges", None
    quarter = w[-max(2, w.size // 4) :]
    if w.size >= 8 and quarter.mean() > 0 and np.ptp(quarter) / quarter.mean() < flat:
        return "drifts", float(quarter.mean())
    return "undecided", None


def power_order(steps: np.ndarray) -> float | None:
    """p in ``steps[t] ~ (t + 1)^-p``, least squares on log-log over the second half (None if undefined)."""
    w = np.asarray(steps, dtype=np.float64)
    t = np.arange(1, w.size + 1)[w.size // 2 :]
    tail = w[w.size // 2 :]
    ok = tail > 1e-14
    if ok.sum() < 3:
        return None
    slope = np.polyfit(np.log(t[ok]), np.log(tail[ok]), 1)[0]
    return float(-slope)


def fixed_point_iteration(
    step: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    n_steps: int,
    log10_bound: float | None = None,
    rtol: float = 1e-6,
    keep_orbit: bool = False,
) -> FixedPoint:
    """Iterate ``x_{t+1} = step(x_t)`` from ``x0 [token, dim]`` for ``n_steps`` steps.

    ``step`` maps a cloud ``[token, dim]`` to the next one (same number of tokens), e.g. a shared
    transformer block. ``log10_bound``: log10 of a Lipschitz bound of the map in W1, if known.
    ``keep_orbit``: keep every iterate (``FixedPoint.orbit``).
    """
    if n_steps < 1:
        raise ValueError(f"n_steps must be at least 1; got {n_steps}")
    x = np.asarray(x0, dtype=np.float64)
    dists, dists_n = np.empty(n_steps), np.empty(n_steps)
    radius = float(np.linalg.norm(x, axis=-1).max())
    orbit = [x] if keep_orbit else None
    for t in range(n_steps):
        nxt = np.asarray(step(x), dtype=np.float64)
        if nxt.shape != x.shape:
            raise ValueError(f"step changed the cloud's shape from {x.shape} to {nxt.shape}")
        if not np.all(np.isfinite(nxt)):
            raise ValueError(f"the iteration diverged to NaN/infinity at step {t}")
        dists[t] = w1_uniform(x, nxt)
        dists_n[t] = w1_uniform(standardise(x), standardise(nxt))
        radius = max(radius, float(np.linalg.norm(nxt, axis=-1).max()))
        x = nxt
        if orbit is not None:
            orbit.append(x)
    tail = dists[n_steps // 2 :]
    ratios = tail[1:] / tail[:-1] if tail.size > 1 else np.array([])
    ratios = ratios[np.isfinite(ratios) & (tail[:-1] > 1e-12)] if ratios.size else ratios
    rate = float(np.median(ratios)) if ratios.size else float("nan")
    converged = bool(dists[-1] <= max(rtol * dists[0], 1e-10))
    contraction = None if log10_bound is None else bool(log10_bound < 0)
    behaviour, drift = orbit_behaviour(dists, rtol)
    return FixedPoint(
        dists,
        rate,
        converged,
        contraction,
        log10_bound,
        x,
        radius,
        dists_n,
        behaviour,
        drift,
        power_order(dists_n),
        None if orbit is None else np.stack(orbit),
    )
