"""The final norm of a model as data, and the linear readout it becomes once its scale is frozen.

A pre-norm transformer reads its last residual stream ``x [d_model]`` as

    logits = norm(x) @ W_U + b_U,     norm(x) = w * c(x) / s(x) + beta

with ``c(x) = x - mean(x)`` and ``s(x) = sqrt(var(x) + eps)`` for LayerNorm, ``c(x) = x`` and
``s(x) = sqrt(mean(x^2) + eps)`` for RMSNorm. ``c`` is linear and only ``s`` is not; with ``s``
frozen at its value on the clean residual, the logit of a direction ``u [d_model]`` (a column of
``W_U``, or the difference of two) is a linear function of ``x``:

    norm(x) . u = x . r + beta . u,     r = c(w * u) / s

(``c`` is a symmetric projection, so ``c(x) . v = x . c(v)``). ``r`` is the readout: any part of the
residual stream contributes ``part . r``, and the parts' contributions sum to the logit exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

NormKind = Literal["layernorm", "rmsnorm"]


@dataclass(frozen=True)
class FinalNorm:
    """``kind``, ``weight [d_model]`` (the multiplier as applied: a Gemma-style ``1 + w`` is given
    as ``1 + w``) or None, ``bias [d_model]`` or None (RMSNorm has none), ``eps``."""

    kind: NormKind
    weight: torch.Tensor | None
    bias: torch.Tensor | None
    eps: float

    def __post_init__(self) -> None:
        if self.kind not in ("layernorm", "rmsnorm"):
            raise ValueError(f"unknown norm kind {self.kind!r}: use 'layernorm' or 'rmsnorm'")
        if self.kind == "rmsnorm" and self.bias is not None:
            raise ValueError("an RMSNorm has no bias")

    def center(self, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        """The linear part before the scale along ``dim``: ``x - mean(x)`` (LayerNorm) or ``x``."""
        return x - x.mean(dim=dim, keepdim=True) if self.kind == "layernorm" else x

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        """``s(x)``, ``x [..., d_model]`` -> ``[...]`` in float32."""
        x = x.float()
        second = self.center(x).pow(2).mean(dim=-1)
        return torch.sqrt(second + self.eps)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """The norm itself, ``x [..., d_model]`` -> ``[..., d_model]`` float32."""
        x = x.float()
        out = self.center(x) / self.scale(x)[..., None]
        if self.weight is not None:
            out = out * self.weight.float()
        if self.bias is not None:
            out = out + self.bias.float()
        return out

    def readout(self, u: torch.Tensor, scale: torch.Tensor | float) -> torch.Tensor:
        """The frozen-scale readout ``r = c(w * u) / s`` of directions ``u [d_model]`` or ``[d_model,
        n]``: ``norm(x) . u = x . r + bias_term(u)`` for the residual ``x`` whose scale is ``s``."""
        u = u.float()
        if self.weight is not None:
            w = self.weight.float()
            u = u * (w if u.dim() == 1 else w[:, None])
        return self.center(u, dim=0) / scale

    def bias_term(self, u: torch.Tensor) -> torch.Tensor:
        """``beta . u`` (zero without a bias), for ``u [d_model]`` or ``[d_model, n]``."""
        if self.bias is None:
            return torch.zeros(u.shape[1:], dtype=torch.float32, device=u.device)
        return self.bias.float() @ u.float()
