"""A zoo model's shared (HA) block as the map the fixed-key bound is about, with its weights read out.

- ``extract_fixed_key_block(loaded, x0)``: the numbers ``attnscope.analysis.block_bound.FixedKeyBlock`` needs,
  read from the real block (content heads: ``attnscope.models.zoo.attention.MultiHeadAttention`` with the keys
  of the first pass on ``x0``; SAN pairwise heads: ``attnscope.models.zoo.san.LocalAttention``).
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
from attnscope.models.loading import LoadedModel


class NotFixedKeyBlockError(ValueError):
    """The model's shared block is not one the fixed-key bound covers."""


def _owner(loaded: LoadedModel):
    return loaded.model if hasattr(loaded.model, "shared_block") else loaded


def _shared(loaded: LoadedModel) -> torch.nn.Module:
    block = getattr(_owner(loaded), "shared_block", None)
    if block is None:
        raise NotFixedKeyBlockError(f"model {loaded.spec.name!r} has no shared (HA) block")
    if not all(hasattr(block, part) for part in ("ln1", "attn", "ln2", "ffn")):
        raise NotFixedKeyBlockError(
            f"the bound covers the zoo's pre-LN Block (ln1, attn, ln2, ffn); "
            f"the shared block of {loaded.spec.name!r} is a {type(block).__name__}"
        )
    return block


def _activation_lipschitz(ffn: torch.nn.Module) -> float:
    acts = [m for m in ffn.modules() if isinstance(m, (torch.nn.GELU, torch.nn.ReLU))]
    if len(acts) != 1:
        raise NotFixedKeyBlockError(f"the FFN must have one GELU or ReLU; found {acts}")
    act = acts[0]
    if isinstance(act, torch.nn.GELU) and act.approximate != "none":
        raise NotFixedKeyBlockError("the bound uses the exact GELU's Lipschitz constant; tanh-GELU is not covered")
    return GELU_LIPSCHITZ if isinstance(act, torch.nn.GELU) else RELU_LIPSCHITZ


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).cpu().numpy()


def head_matrices(attn: torch.nn.Module) -> np.ndarray:
    """``W^h = W_O^h W_V^h`` per head, ``[H, D, D]``, so that ``Attn(u)_i = sum_h W^h sum_j p^h_ij u_j + const``.

    Content heads (``MultiHeadAttention``): head h owns rows ``h*d:(h+1)*d`` of W_V and the same
    columns of W_O. SAN (``LocalAttention``): channel group h of ``beta`` uses head h's weights."""
    if hasattr(attn, "gamma"):  # SAN
        h = attn.heads
        w_v, w_o = _np(attn.beta.weight), _np(attn.out.weight)
        c = w_v.shape[0] // h
    else:
        h, c = attn.heads, attn.head_dim
        w_v, w_o = _np(attn.v.weight), _np(attn.out.weight)
    return np.stack([w_o[:, k * c : (k + 1) * c] @ w_v[k * c : (k + 1) * c] for k in range(h)])


def _content_radius(attn, keys: torch.Tensor) -> np.ndarray:
    """``r_h`` for ``MultiHeadAttention`` with the fixed ``keys [1, H, N, d]`` (0 for content-free heads)."""
    if attn.ea is not None:
        raise NotFixedKeyBlockError("Evolving Attention passes logits between passes: the block is not one fixed map")
    if not attn.content:
        return np.zeros(attn.heads)
    w_q = _np(attn.q.weight).reshape(attn.heads, attn.head_dim, -1)  # [H, d, D]
    return content_score_radius(w_q, _np(keys[0]))


def _san_radius(attn) -> np.ndarray:
    """``r_h`` for SAN pairwise ``LocalAttention`` (a bound on every score gradient, centre 0)."""
    if attn.mode != "pairwise":
        raise NotFixedKeyBlockError(
            "only SAN pairwise attention is covered (patchwise mixes the fixed keys nonlinearly)"
        )
    g1, g2 = attn.gamma[0], attn.gamma[2]
    rel = attn.phi.out_features
    return mlp_score_radius(_np(attn.phi.weight), _np(g1.weight)[:, :rel], _np(g2.weight), RELU_LIPSCHITZ)


def extract_fixed_key_block(loaded: LoadedModel, x0: np.ndarray) -> FixedKeyBlock:
    """The fixed-key bound's inputs for ``loaded``'s shared block, keys from the first pass on ``x0``."""
    block = _shared(loaded)
    attn = block.attn
    if hasattr(attn, "gamma"):
        radius = _san_radius(attn)
    else:
        kwargs = _owner(loaded).shared_block_kwargs(torch.as_tensor(x0, dtype=torch.float64)[None])
        radius = _content_radius(attn, kwargs["state"]["keys"])
    norms = np.array([np.linalg.norm(w, 2) for w in head_matrices(attn)])
    ffn_in, ffn_out = block.ffn[0], block.ffn[-1]
    ffn = (
        np.linalg.norm(_np(ffn_out.weight), 2)
        * _activation_lipschitz(block.ffn)
        * np.linalg.norm(_np(ffn_in.weight), 2)
    )
    return FixedKeyBlock(
        ln1_gamma=_np(block.ln1.weight),
        ln1_eps=float(block.ln1.eps),
        ln2_gamma=_np(block.ln2.weight),
        ln2_eps=float(block.ln2.eps),
        head_norms=norms,
        score_radius=radius,
        ffn_norm=float(ffn),
    )


class BlockHalves:
    """The shared block in float64 on the CPU, keys fixed from ``x0``: ``halves(x) -> (T1 x, T x)``."""

    def __init__(self, loaded: LoadedModel, x0: np.ndarray):
        owner = _owner(loaded)
        self.block = copy.deepcopy(_shared(loaded)).double().eval().cpu()
        self.state = owner.shared_block_kwargs(torch.as_tensor(x0, dtype=torch.float64)[None])["state"]

    def torch_halves(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x [1, token, dim]`` float64 -> ``(T1 x, T x)`` (differentiable)."""
        b = self.block
        h, _, _ = b.attn(b.ln1(x), dict(self.state))
        mid = x + h
        return mid, mid + b.ffn(b.ln2(mid))

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
    loaded: LoadedModel,
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
