"""The two maps between the residual stream and a head's query/key that are linear once frozen
(``docs/methods/qk-attribution.md``).

* A pre-attention norm with its scale frozen at its clean value. RMSNorm
  ``y = x / sqrt(mean(x^2) + eps) * (g + offset)`` is a per-position scalar times a diagonal map;
  LayerNorm ``y = (x - mean(x)) / sqrt(var(x) + eps) * g + b`` is centering (linear), the frozen
  scalar and the gain, plus its bias ``b`` (a part of its own).
* Rotary position encoding (Su et al. 2021, RoFormer), a rotation of each pair of dimensions by an
  angle that depends on the position only, in the "rotate half" layout of transformers' Llama
  family: ``rope(x, p) = x * cos[p] + rotate_half(x) * sin[p]``.

Both commute with a sum of parts, which is what makes a score bilinear in what the parts wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch


@dataclass(frozen=True)
class FrozenNorm:
    """A pre-attention norm: ``kind`` ``"rms"`` or ``"layer"``; ``weight [d_model]`` (None: ones),
    ``bias [d_model]`` or None; ``eps``; ``weight_offset`` added to the weight (Gemma's ``1 + g``)."""

    kind: Literal["rms", "layer"]
    weight: torch.Tensor | None
    bias: torch.Tensor | None = None
    eps: float = 1e-6
    weight_offset: float = 0.0

    def gain(self, d_model: int, dtype: torch.dtype) -> torch.Tensor:
        """``[d_model]`` the diagonal the normalised vector is multiplied by."""
        if self.weight is None:
            return torch.ones(d_model, dtype=dtype)
        return self.weight.detach().to(dtype) + self.weight_offset

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        """``x [..., d_model]`` (the whole residual stream) -> ``[..., 1]`` the frozen scalar
        ``1 / sqrt(mean(x^2) + eps)`` (RMS) or ``1 / sqrt(var(x) + eps)`` (LayerNorm, biased var)."""
        if self.kind == "rms":
            return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        centred = x - x.mean(-1, keepdim=True)
        return torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + self.eps)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """The norm itself, ``[..., d_model] -> [..., d_model]`` (for checks)."""
        parts, bias = self.apply_to_parts(x.unsqueeze(0), x)
        y = parts[0]
        return y if bias is None else y + bias

    def apply_to_parts(self, parts: torch.Tensor, total: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``parts [part, ..., d_model]`` that sum to ``total [..., d_model]`` -> the normed parts
        ``[part, ..., d_model]`` (scale frozen at ``total``'s) and the norm's own bias ``[d_model]`` or
        None. The normed parts plus the bias sum to the norm of ``total``."""
        gain = self.gain(total.shape[-1], parts.dtype)
        s = self.scale(total.to(parts.dtype))
        if self.kind == "layer":
            parts = parts - parts.mean(-1, keepdim=True)
        bias = None if self.bias is None else self.bias.detach().to(parts.dtype)
        return parts * s * gain, bias


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``[..., d] -> [..., d]``: ``(-x2, x1)`` of the two halves ``x1, x2`` (transformers' layout)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


@dataclass(frozen=True)
class Rope:
    """Rotary tables ``cos, sin [token, d_head]`` of one example (as the model computes them)."""

    cos: torch.Tensor
    sin: torch.Tensor

    def __call__(self, x: torch.Tensor, position: int | torch.Tensor) -> torch.Tensor:
        """``x [..., d_head]`` rotated to ``position`` (an int, or ``[token]`` indices for ``x [token, d_head]``)."""
        cos = self.cos[position].to(x.dtype)
        sin = self.sin[position].to(x.dtype)
        return x * cos + rotate_half(x) * sin

    @classmethod
    def from_theta(cls, n_tokens: int, d_head: int, theta: float = 10000.0) -> Rope:
        """The plain tables ``angle[p, k] = p / theta^(2k/d)`` (no scaling), for tests and tiny models."""
        inv = 1.0 / theta ** (torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
        angles = torch.arange(n_tokens, dtype=torch.float64)[:, None] * inv[None, :]
        emb = torch.cat((angles, angles), dim=-1)
        return cls(cos=emb.cos(), sin=emb.sin())


def identity_rope(x: torch.Tensor, position: int | torch.Tensor) -> torch.Tensor:
    """No position encoding in the query/key (absolute positions live in the residual stream)."""
    return x
