"""A zoo model's shared (HA) block as the map the fixed-key bound is about, with its weights read out.

- ``extract_fixed_key_block(loaded, x0)``: the numbers ``attnscope.analysis.block_bound.FixedKeyBlock`` needs,
  read from the block's ``Sites`` (``attnscope.models.sites``: content heads with the keys of the first
  pass on ``x0``; SAN pairwise heads through their relation functions).
- ``BlockHalves``: the block in float64 on the CPU, split as ``T1(x) = x + Attn(LN1 x)`` and
  ``T(x) = T1(x) + FFN(LN2 T1(x))`` (the LN2 input is what the bound's sigma2 is measured on).
- ``estimate_block_lipschitz``: ``max d_inf(T x', T x) / d_inf(x', x)`` over random (dense and
  single-token) perturbations and a gradient ascent on the ratio; every pair is scored against its
  own pairwise bound, so ``worst_slack <= 0`` must hold (a test asserts it on every HA model).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from attnscope.analysis.block_bound import (
    GELU_LIPSCHITZ,
    RELU_LIPSCHITZ,
    FixedKeyBlock,
    block_bound,
    content_score_radius,
    d_inf,
    mlp_score_radius,
    token_sigma,
)
from attnscope.models.interface import Backend
from attnscope.models.sites import BlockSites, Sites, SitesUnavailableError

ACTIVATION_LIPSCHITZ = {"gelu": GELU_LIPSCHITZ, "relu": RELU_LIPSCHITZ}


class NotFixedKeyBlockError(ValueError):
    """The model's shared block is not one the fixed-key bound covers."""


def shared_sites(loaded: Backend) -> Sites:
    """The model's ``Sites`` when its one shared block is a pre-LN block the bound covers (the zoo's
    ``x + Attn(LN1 x)``, then ``+ FFN(LN2 .)``, called with the pass state), else
    ``NotFixedKeyBlockError`` saying why."""
    try:
        sites = loaded.sites
    except SitesUnavailableError as exc:
        raise NotFixedKeyBlockError(str(exc)) from None
    if not sites.shared:
        raise NotFixedKeyBlockError(f"model {loaded.spec.name!r} has no shared (HA) block")
    if not (sites.pass_state and sites.norm_placement == "pre" and not sites.parallel):
        raise NotFixedKeyBlockError(
            f"the bound covers the zoo's pre-LN Block (LN1, attention, LN2, FFN); "
            f"the shared block of {loaded.spec.name!r} is a {sites.family} block"
        )
    return sites


def _activation_lipschitz(blk: BlockSites) -> float:
    if blk.W_in is None or blk.W_out is None:
        raise NotFixedKeyBlockError("the bound needs a plain two-layer FFN (W_in, activation, W_out)")
    if blk.act not in ACTIVATION_LIPSCHITZ:
        raise NotFixedKeyBlockError(
            f"the FFN's activation {blk.act!r} is not covered: the bound uses exact GELU's or ReLU's Lipschitz constant"
        )
    return ACTIVATION_LIPSCHITZ[blk.act]


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).cpu().numpy()


def head_matrices(blk: BlockSites) -> np.ndarray:
    """``W^h = (W_V[h] W_O[h])^T`` per head, ``[H, D, D]``, so that ``Attn(u)_i = sum_h W^h sum_j
    p^h_ij u_j + const`` (``BlockSites`` weights: content heads and SAN's channel groups alike)."""
    w_v, w_o = _np(blk.W_V), _np(blk.W_O)  # [H, D, d], [H, d, D]
    return np.stack([(w_v[h] @ w_o[h]).T for h in range(w_v.shape[0])])


def _content_radius(blk: BlockSites, keys: torch.Tensor | None) -> np.ndarray:
    """``r_h`` for content heads with the fixed ``keys [1, H, N, d]`` (0 for content-free heads)."""
    if not blk.logit_edits:
        raise NotFixedKeyBlockError("Evolving Attention passes logits between passes: the block is not one fixed map")
    if blk.scores == "none":
        return np.zeros(blk.W_V.shape[0])
    w_q = _np(blk.W_Q).transpose(0, 2, 1)  # [H, d, D]
    return content_score_radius(w_q, _np(keys[0]))


def _san_radius(blk: BlockSites) -> np.ndarray:
    """``r_h`` for SAN pairwise heads (a bound on every score gradient, centre 0): reads SAN's
    relation functions ``phi`` and ``gamma`` (``BlockSites.scores == "san-pairwise"``)."""
    if blk.scores != "san-pairwise":
        raise NotFixedKeyBlockError(
            "only SAN pairwise attention is covered (patchwise mixes the fixed keys nonlinearly)"
        )
    attn = blk.attn
    g1, g2 = attn.gamma[0], attn.gamma[2]
    rel = attn.phi.out_features
    return mlp_score_radius(_np(attn.phi.weight), _np(g1.weight)[:, :rel], _np(g2.weight), RELU_LIPSCHITZ)


def _state(sites: Sites, x0: np.ndarray) -> dict:
    """What every pass of the shared block reuses (HA: the keys of the first pass on ``x0``), float64."""
    return sites.shared_state(torch.as_tensor(x0, dtype=torch.float64)[None])["state"]


def extract_fixed_key_block(loaded: Backend, x0: np.ndarray) -> FixedKeyBlock:
    """The fixed-key bound's inputs for ``loaded``'s shared block, keys from the first pass on ``x0``."""
    sites = shared_sites(loaded)
    blk = sites.blocks[0]
    if blk.scores.startswith("san"):
        radius = _san_radius(blk)
    else:
        radius = _content_radius(blk, None if not blk.logit_edits else _state(sites, x0).get("keys"))
    norms = np.array([np.linalg.norm(w, 2) for w in head_matrices(blk)])
    ffn = np.linalg.norm(_np(blk.W_out), 2) * _activation_lipschitz(blk) * np.linalg.norm(_np(blk.W_in), 2)
    return FixedKeyBlock(
        ln1_gamma=_np(blk.ln_attn.weight),
        ln1_eps=float(blk.ln_attn.eps),
        ln2_gamma=_np(blk.ln_mlp.weight),
        ln2_eps=float(blk.ln_mlp.eps),
        head_norms=norms,
        score_radius=radius,
        ffn_norm=float(ffn),
    )


class BlockHalves:
    """The shared block in float64 on the CPU, keys fixed from ``x0``: ``halves(x) -> (T1 x, T x)``
    with ``T1 x = resid_mid = x + Attn(LN1 x)`` and ``T x = resid_post`` (``attnscope.models.sites``).
    ``block``: the float64 copy of the block (``attn``, ``mlp``: its attention and MLP)."""

    def __init__(self, loaded: Backend, x0: np.ndarray):
        sites = shared_sites(loaded)
        blk = sites.blocks[0]
        memo: dict = {}
        self.block = copy.deepcopy(blk.block, memo).double().eval().cpu()
        self.attn, self.mlp = memo[id(blk.attn)], memo[id(blk.mlp)]
        self.ln_attn, self.ln_mlp = blk.ln_attn, blk.ln_mlp
        self.state = _state(sites, x0)

    def torch_halves(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x [1, token, dim]`` float64 -> ``(T1 x, T x)`` (differentiable)."""
        h = self.attn(self.ln_attn.apply(x), dict(self.state))[0]
        mid = x + h
        return mid, mid + self.mlp(self.ln_mlp.apply(mid))

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with torch.no_grad():
            mid, out = self.torch_halves(torch.as_tensor(x, dtype=torch.float64)[None])
        return mid[0].numpy(), out[0].numpy()


@dataclass
class BlockEstimate:
    """Empirical ``L_hat`` of the block in d_inf around one cloud, each pair against its own bound."""

    estimate: float  # max observed ratio
    log10_bound_at_estimate: float  # the pairwise bound of the pair that gave it
    worst_slack: float  # max over pairs of log10(ratio / pair bound): must be <= 0
    n_pairs: int


def _pair_record(fk: FixedKeyBlock, x, mid, out, xp, midp, outp) -> tuple[float, float] | None:
    den = d_inf(x, xp)
    if den < 1e-12:
        return None
    ratio = d_inf(out, outp) / den
    s1 = min(token_sigma(x, fk.ln1_eps).min(), token_sigma(xp, fk.ln1_eps).min())
    s2 = min(token_sigma(mid, fk.ln2_eps).min(), token_sigma(midp, fk.ln2_eps).min())
    return ratio, block_bound(fk, float(s1), float(s2)).log10_bound


def estimate_block_lipschitz(
    loaded: Backend,
    x: np.ndarray,
    x0: np.ndarray | None = None,
    eps: tuple[float, ...] = (1e-3, 1e-2, 1e-1),
    n_draws: int = 3,
    ascent_steps: int = 15,
    lr: float = 0.3,
    seed: int = 0,
) -> BlockEstimate:
    """``L_hat`` of the shared block around the cloud ``x [token, dim]`` (keys fixed from ``x0``,
    default ``x``): perturbations of relative size ``eps`` (times the largest token norm)."""
    x = np.asarray(x, dtype=np.float64)
    x0 = x if x0 is None else np.asarray(x0, dtype=np.float64)
    fk = extract_fixed_key_block(loaded, x0)
    halves = BlockHalves(loaded, x0)
    mid, out = halves(x)
    scale = float(np.linalg.norm(x, axis=-1).max())
    rng = np.random.default_rng(seed)
    records: list[tuple[float, float]] = []

    def score(xp: np.ndarray) -> None:
        rec = _pair_record(fk, x, mid, out, xp, *halves(xp))
        if rec is not None:
            records.append(rec)

    starts = []
    for e in eps:
        for single in (False, True):
            for _ in range(n_draws):
                xi = rng.standard_normal(x.shape)
                if single:
                    xi *= (np.arange(x.shape[0]) == rng.integers(x.shape[0]))[:, None]
                xi *= e * scale / np.maximum(np.linalg.norm(xi, axis=-1, keepdims=True), 1e-300)
                score(x + xi)
                starts.append(xi)
    xt, out_t = torch.as_tensor(x), torch.as_tensor(out)
    for xi in starts[:: max(1, n_draws)]:  # one ascent per (size, kind)
        delta = torch.as_tensor(xi)
        for _ in range(ascent_steps):
            delta.requires_grad_(True)
            _, outp = halves.torch_halves((xt + delta)[None])
            # smooth surrogate of the d_inf ratio: the soft-max over tokens of the moves
            num = torch.logsumexp(20 * (outp[0] - out_t).norm(dim=-1) / scale, 0) * scale / 20
            ratio = num / delta.norm(dim=-1).max().clamp_min(1e-300)
            (grad,) = torch.autograd.grad(ratio, delta)
            with torch.no_grad():
                g = grad.norm()
                if not torch.isfinite(g) or g == 0:
                    break
                size = delta.norm(dim=-1).max()
                delta = delta + lr * size * grad / g
                delta = delta * (size / delta.norm(dim=-1).max())  # keep the perturbation's size
            score(x + delta.detach().numpy())
    if not records:
        raise ValueError("no perturbation moved the cloud; the cloud may be all zeros")
    ratios = np.array([r for r, _ in records])
    bounds = np.array([b for _, b in records])
    best = int(np.argmax(ratios))
    slack = float(np.max(np.log10(np.maximum(ratios, 1e-300)) - bounds))
    return BlockEstimate(float(ratios[best]), float(bounds[best]), slack, len(records))
