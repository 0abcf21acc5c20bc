"""Lipschitz constant of a real attention layer in W1: the DERIVED bound and an empirical estimate.

``lipschitz_report(loaded, layer, x)`` measures R on the token cloud ``x [token, dim]`` (the layer's
input for some text), computes the bound of ``attnscope.analysis.lipschitz`` from the layer's weights, and
estimates ``L_hat`` on the SAME map (``attnscope.pipelines.layers.AttentionSublayer``: self-attention with every
bias + W_O + b_O, optional residual, no LayerNorm) with

- random perturbations (``attnscope.analysis.lipschitz.random_ratios``: dense and single-token, several sizes);
- gradient ascent on the ratio with torch autograd: the surrogate
  ``mean_i ||Phi(x)_i - Phi(x')_i|| / mean_i ||x_i - x'_i||`` (the identity coupling on both sides),
  normalised steps, every iterate projected into B_R; each iterate is scored with the exact W1
  ratio (assignment), and the best exact ratio is kept.

Every measure compared lies in B_R, so ``L_hat <= L`` must hold; a violation is a bug.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from attnscope.analysis.lipschitz import LipschitzBound, lipschitz_bound, project_to_ball, random_ratios, w1_ratio
from attnscope.models.loading import Backend
from attnscope.pipelines.layers import AttentionSublayer, extract_attention_params

log = logging.getLogger(__name__)


@dataclass
class LipschitzReport:
    layer: int
    radius: float
    n_tokens: int
    residual: bool
    bound: LipschitzBound
    estimate: float
    best_random: float
    best_ascent: float
    n_evaluations: int
    seconds: float
    records: list[dict] = field(default_factory=list, repr=False)

    @property
    def log10_estimate(self) -> float:
        return float(np.log10(self.estimate))

    @property
    def log10_ratio(self) -> float:
        """``log10(L_hat / L)`` (the ratio itself underflows float64 for real layers)."""
        return self.log10_estimate - self.bound.log10_bound


def _ball(x: torch.Tensor, radius: float) -> torch.Tensor:
    norms = x.norm(dim=-1, keepdim=True).clamp_min(1e-300)
    return x * torch.clamp(radius / norms, max=1.0)


def gradient_ascent(
    phi: AttentionSublayer,
    x: np.ndarray,
    radius: float,
    eps: float,
    steps: int = 30,
    lr: float = 0.2,
    single_token: bool = False,
    seed: int = 0,
) -> list[dict]:
    """Ascend the identity-coupling surrogate of the W1 ratio from a random start of size ``eps*R``.

    Args:
        x: ``[token, dim]`` inside B_radius. Returns one record per iterate with the EXACT ratio.
    """
    gen = torch.Generator().manual_seed(seed)
    xt = torch.as_tensor(x, dtype=torch.float64)
    delta = torch.randn(xt.shape, generator=gen, dtype=torch.float64)
    if single_token:
        keep = torch.zeros(xt.shape[0], 1, dtype=torch.float64)
        keep[int(torch.randint(xt.shape[0], (1,), generator=gen))] = 1.0
        delta = delta * keep
    delta = delta * (eps * radius / delta.norm(dim=-1, keepdim=True).clamp_min(1e-300))
    with torch.no_grad():
        phi_x = phi(xt)
    records = []
    for it in range(steps):
        delta.requires_grad_(True)
        xp = _ball(xt + delta, radius)
        phi_xp = phi(xp)
        num = (phi_xp - phi_x).norm(dim=-1).mean()
        den = (xp - xt).norm(dim=-1).mean().clamp_min(1e-300)
        (grad,) = torch.autograd.grad(num / den, delta)
        with torch.no_grad():
            exact = w1_ratio(phi_xp.detach().numpy(), phi_x.numpy(), xp.detach().numpy(), x)
            if np.isfinite(exact):
                records.append(
                    {
                        "kind": "ascent" + ("-single" if single_token else ""),
                        "eps": eps,
                        "step": it,
                        "ratio": float(exact),
                    }
                )
            g = grad.norm()
            if not torch.isfinite(g) or g == 0:
                break
            delta = (delta + lr * delta.norm() * grad / g).detach()
    return records


def lipschitz_report(
    loaded: Backend,
    layer: int,
    x: np.ndarray,
    residual: bool = False,
    eps: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 0.5),
    n_draws: int = 3,
    ascent_eps: tuple[float, ...] = (1e-2, 1e-1),
    ascent_steps: int = 25,
    seed: int = 0,
) -> LipschitzReport:
    """Bound and estimate for layer ``layer`` on the token cloud ``x [token, dim]`` (its input).

    R is ``max_i ||x_i||``; the bound holds on P(B_R) and every perturbed cloud is kept in B_R. It runs
    on the process's torch threads (set once at start-up: ``ATTNSCOPE_TORCH_THREADS``); a request never
    changes them.
    """
    start = time.perf_counter()
    x = np.asarray(x, dtype=np.float64)
    radius = float(np.linalg.norm(x, axis=1).max())
    bound = lipschitz_bound(extract_attention_params(loaded, layer), radius, residual=residual)
    phi = AttentionSublayer(loaded, layer, residual=residual)
    x = project_to_ball(x, radius)
    records = random_ratios(phi.numpy, x, radius, eps=eps, n_draws=n_draws, seed=seed)
    best_random = max((r["ratio"] for r in records), default=0.0)
    ascent: list[dict] = []
    for i, e in enumerate(ascent_eps):
        for single in (False, True):
            ascent += gradient_ascent(phi, x, radius, e, steps=ascent_steps, single_token=single, seed=seed + i)
    best_ascent = max((r["ratio"] for r in ascent), default=0.0)
    estimate = max(best_random, best_ascent)
    if estimate > 10 ** min(bound.log10_bound, 300):
        log.error(
            "layer %d: L_hat=%.4g exceeds the bound 10^%.2f: a bug in the bound or the estimate",
            layer,
            estimate,
            bound.log10_bound,
        )
    return LipschitzReport(
        layer,
        radius,
        x.shape[0],
        residual,
        bound,
        estimate,
        best_random,
        best_ascent,
        len(records) + len(ascent),
        time.perf_counter() - start,
        records + ascent,
    )
