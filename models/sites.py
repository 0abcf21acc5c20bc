"""A model's anatomy as data: ``Sites``, built once per loaded model from its family's table entry
(``attnscope.models.site_families``; ``attnscope.models.site_table`` builds it).

Engines that look inside a forward pass (recording, interventions, logit lens, QK attribution)
read ``backend.sites`` and never branch on model kind::

    sites = backend.sites                 # SitesUnavailableError (422) for a family without an entry
    blk = sites.blocks[3]
    blk.W_Q                               # [n_heads, d_model, d_head], a view of the model's weight
    blk.W_O                               # [n_heads, d_head, d_model]
    sites.final_norm.apply(resid)         # [..., d_model] -> the normed stream the unembedding reads
    sites.unembed.W_U                     # [d_model, vocab | classes]

Weights are views of the model's own parameters (``detach()``: no copy, no gradient); nothing here
writes to them. Per-head weights follow the TransformerLens convention: ``q[b, p, h] =
x[b, p] @ W_Q[h] + b_Q[h]`` with ``x`` the normed stream entering the attention, and the attention
output is ``sum_h z[b, p, h] @ W_O[h] + b_O`` with ``z`` the head outputs before the output
projection (``head_z``, ``[batch, pos, head, head_dim]``). Grouped-query attention: ``W_K``/``W_V``
have ``n_kv_heads`` heads and query head ``h`` reads key/value head ``h // (n_heads // n_kv_heads)``.

Residual bookkeeping (``norm_placement``, ``parallel``), per block ``l``:

| placement | stream |
|---|---|
| ``pre`` | ``resid_mid = resid_pre + attn_out``; ``resid_post = resid_mid + mlp_out`` |
| ``pre`` + ``parallel`` | ``resid_post = resid_pre + attn_out + mlp_out`` (both read ``resid_pre``) |
| ``post`` | ``resid_mid = ln_attn(resid_pre + attn_out)``; ``resid_post = ln_mlp(resid_mid + mlp_out)`` |

``attn_out`` includes the output projection's bias and a layer scale where the family has one
(``BlockSites.out_scale``: DINOv2's ``lambda``), so ``attn_out = (sum_h z_h W_O[h] + b_O) * out_scale``;
sandwich norms (Gemma 2: ``BlockSites.ln_attn_out``/``ln_mlp_out``) are applied after it:
``attn_out = ln_attn_out(sum_h z_h W_O[h])``, so there ``attn_out`` is not linear in the heads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch

SITE_NAMES = ("resid_pre", "head_z", "attn_out", "resid_mid", "mlp_out", "resid_post")
"""The sites a session records or edits, per block: ``resid_pre``/``resid_mid``/``resid_post``/
``attn_out``/``mlp_out`` ``[batch, pos, d_model]``, ``head_z`` ``[batch, pos, head, head_dim]``."""


class SitesUnavailableError(ValueError):
    """The model's family has no ``Sites`` entry (or lacks a part a feature needs); the message names
    what is missing. The API answers 422: the model still loads for maps."""


class SiteOutOfRangeError(ValueError):
    """A block or head index outside the model (422 naming the range)."""


@dataclass(frozen=True)
class Norm:
    """A normalisation layer: ``kind`` ``layernorm`` (``(x - mean) / sqrt(var + eps) * weight +
    bias``), ``rmsnorm`` (``x / sqrt(mean(x^2) + eps) * weight``, in float32 then cast back, as
    transformers' Llama) or ``rmsnorm1p`` (Gemma: ``* (1 + weight)``, cast after the product).
    ``weight``/``bias`` ``[d_model]`` (None: absent); ``module``: the model's."""

    kind: Literal["layernorm", "rmsnorm", "rmsnorm1p"]
    weight: torch.Tensor | None
    bias: torch.Tensor | None
    eps: float
    module: torch.nn.Module | None = None

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        """``[..., 1]`` the per-position divisor ``sqrt(var + eps)`` (layernorm) or ``sqrt(mean(x^2) +
        eps)`` (rmsnorm) of ``x [..., d_model]``: freeze it and the norm is linear in ``x``."""
        x = x.float()
        if self.kind != "layernorm":
            return torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + self.eps)

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """``x [..., d_model]`` -> the normed ``[..., d_model]``, computed as the model computes it."""
        if self.kind == "rmsnorm1p":
            h = x.float()
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
            return (h * (1.0 + self.weight.float())).to(x.dtype)
        if self.kind == "rmsnorm":
            dtype = x.dtype
            h = x.float()
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
            return h.to(dtype) if self.weight is None else self.weight * h.to(dtype)
        w = None if self.weight is None else self.weight.to(x.dtype)
        b = None if self.bias is None else self.bias.to(x.dtype)
        return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b, self.eps)


@dataclass(frozen=True)
class Pooler:
    """A dense layer and activation between a classifier's pooled vector and its head (BERT's
    ``pooler``: ``tanh(pooled @ W + b)``). ``W [d_model, d_pool]``, ``b [d_pool]`` or None, ``act``
    ``tanh`` or None (linear)."""

    W: torch.Tensor
    b: torch.Tensor | None
    act: Literal["tanh"] | None = "tanh"

    def pre_activation(self, pooled: torch.Tensor) -> torch.Tensor:
        """``pooled [..., d_model]`` -> ``[..., d_pool]``: ``pooled @ W + b``."""
        z = pooled @ self.W
        return z if self.b is None else z + self.b

    def activate(self, z: torch.Tensor) -> torch.Tensor:
        return torch.tanh(z) if self.act == "tanh" else z


@dataclass(frozen=True)
class Unembed:
    """What reads the last residual stream: ``logits = final_norm(resid) @ W_U + b_U``.

    ``W_U [d_model | d_pool, vocab | classes]``. ``kind``: ``lm_head`` (every position has logits) or
    ``classifier`` (the normed stream is pooled first: ``pooling`` ``mean`` over real positions,
    ``cls`` position 0, or ``position`` for an LM head; then ``pooler``, where the family has one)."""

    W_U: torch.Tensor
    b_U: torch.Tensor | None
    kind: Literal["lm_head", "classifier"]
    pooling: Literal["position", "mean", "cls"] = "position"
    softcap: float | None = None
    pooler: Pooler | None = None

    def logits(self, normed: torch.Tensor) -> torch.Tensor:
        """``normed [..., d_model]`` (the final norm's output, pooled for a classifier) -> logits
        ``[..., vocab | classes]``, through the pooler where there is one, with the family's final
        soft-cap ``c tanh(z / c)`` (Gemma 2)."""
        if self.pooler is not None:
            normed = self.pooler.activate(self.pooler.pre_activation(normed))
        z = normed @ self.W_U
        if self.b_U is not None:
            z = z + self.b_U
        return z if self.softcap is None else self.softcap * torch.tanh(z / self.softcap)


@dataclass(frozen=True)
class Rope:
    """Rotary position embedding as the family applies it: ``apply(q, k, positions)`` rotates
    ``q [batch, head, pos, d_head]`` and ``k [batch, kv_head, pos, d_head]`` (post-projection, bias
    included) by the angles of ``positions [batch, pos]`` (long) and returns ``(q, k)``."""

    rotary: torch.nn.Module
    rotate: Callable

    def apply(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Partial rotary (Phi, GPT-NeoX): where the tables are narrower than ``d_head`` only the first
        ``cos.shape[-1]`` dimensions are rotated and the rest pass, as those attentions split them."""
        cos, sin = self.rotary(q, positions.to(q.device))
        r = cos.shape[-1]
        if r >= q.shape[-1]:
            return self.rotate(q, k, cos, sin)
        q_rot, k_rot = self.rotate(q[..., :r], k[..., :r], cos, sin)
        return torch.cat((q_rot, q[..., r:]), -1), torch.cat((k_rot, k[..., r:]), -1)


@dataclass(frozen=True)
class BlockSites:
    """Block ``l``'s handles. Modules are the model's own (read them, never set anything on them).

    ``W_Q [n_heads, d_model, d_head]``, ``b_Q [n_heads, d_head]``; ``W_K``/``W_V [n_kv_heads,
    d_model, d_head]``, ``b_K``/``b_V [n_kv_heads, d_head]``; ``W_O [n_heads, d_head, d_model]``,
    ``b_O [d_model]``; biases None where the model has none; ``W_Q``/``W_K`` None for content-free
    heads (the zoo's positional heads). ``out_scale [d_model]``: a layer scale after the output
    projection (and ``mlp_scale`` after the MLP), None for most families.
    ``rope``: None for absolute / learned positions. ``scores``: how the logits are formed,
    ``content`` (``q k^T``), ``none`` (content-free: a positional bias only), ``san-pairwise`` /
    ``san-patchwise`` (SAN's relation functions, ``attn.phi/psi/gamma``); ``position_bias``: a
    positional logit bias is added (the zoo's Gaussian / learned / shift heads); ``logit_edits``:
    False where the logits flow into the next layer (Evolving Attention).
    ``W_in [d_model, d_mlp]``/``b_in``, ``W_out [d_mlp, d_model]``/``b_out``, ``act``
    (``gelu`` exact, ``gelu-tanh``, ``relu``): a plain two-layer MLP, where the table names one.
    """

    index: int
    block: torch.nn.Module
    attn: torch.nn.Module
    out_proj: torch.nn.Module
    mlp: torch.nn.Module
    W_Q: torch.Tensor | None
    b_Q: torch.Tensor | None
    W_K: torch.Tensor | None
    b_K: torch.Tensor | None
    W_V: torch.Tensor
    b_V: torch.Tensor | None
    W_O: torch.Tensor
    b_O: torch.Tensor | None
    ln_attn: Norm
    ln_mlp: Norm
    rope: Rope | None = None
    out_scale: torch.Tensor | None = None
    mlp_scale: torch.Tensor | None = None
    logit_edits: bool = True
    ln_attn_out: Norm | None = None
    ln_mlp_out: Norm | None = None
    scores: str = "content"
    position_bias: bool = False
    W_in: torch.Tensor | None = None
    b_in: torch.Tensor | None = None
    W_out: torch.Tensor | None = None
    b_out: torch.Tensor | None = None
    act: str | None = None


@dataclass(frozen=True)
class Sites:
    """The anatomy of one loaded model (see the module docstring). ``blocks[l]`` for ``l <
    n_layers``; a shared block applied ``n_layers`` times (the zoo's HA models) appears ``n_layers``
    times (the same modules, ``shared=True``); ``shared_state(x0 [1, pos, d_model]) -> kwargs`` gives
    what every pass of it reuses (HA: the keys of the first pass), ``pass_state``: blocks are called
    ``block(x, state)`` (the zoo). ``embed``: the token / patch embedding module.
    ``final_norm``/``unembed``: None where the family has none (a BERT encoder's output is its last
    block's stream; the missing part is named by ``require``)."""

    family: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_model: int
    d_head: int
    blocks: tuple[BlockSites, ...]
    embed: torch.nn.Module
    final_norm: Norm | None
    unembed: Unembed | None
    norm_placement: Literal["pre", "post"]
    parallel: bool = False
    shared: bool = False
    blocks_path: str = ""
    startable: bool = True
    pass_state: bool = False
    shared_state: Callable | None = field(default=None, repr=False, compare=False)

    @property
    def logit_edits(self) -> bool:
        """Whether every block's attention logits may be edited (False where a layer's logits flow
        into the next layer, as in Evolving Attention: editing them is not defined)."""
        return all(b.logit_edits for b in self.blocks)

    def block(self, layer: int) -> BlockSites:
        """``blocks[layer]``, or a ``SiteOutOfRangeError`` naming the range."""
        if not 0 <= int(layer) < self.n_layers:
            raise SiteOutOfRangeError(f"layer {layer} is out of range: this model has layers 0..{self.n_layers - 1}")
        return self.blocks[int(layer)]

    def check_head(self, head: int) -> int:
        if not 0 <= int(head) < self.n_heads:
            raise SiteOutOfRangeError(f"head {head} is out of range: this model has heads 0..{self.n_heads - 1}")
        return int(head)

    def kv_head_of(self, head: int) -> int:
        """The key/value head query head ``head`` reads (grouped-query attention)."""
        return int(head) // (self.n_heads // self.n_kv_heads)

    def require(self, *parts: str, feature: str = "this analysis") -> None:
        """Refuse (``SitesUnavailableError``) when a part a feature needs is missing: ``final_norm``,
        ``unembed``, ``lm_head`` (an unembedding of every position), ``classifier`` (a pooled class
        head), ``W_Q``/``W_K`` (content heads)."""
        missing = []
        for part in parts:
            if part in ("final_norm", "unembed") and getattr(self, part) is None:
                missing.append(part)
            elif part == "classifier" and (self.unembed is None or self.unembed.kind != "classifier"):
                missing.append("a classification head (it outputs an embedding or next-token logits)")
            elif part == "lm_head" and (self.unembed is None or self.unembed.kind != "lm_head"):
                missing.append("an LM head (unembedding of every position)")
            elif part in ("W_in", "W_out") and any(getattr(b, part) is None for b in self.blocks):
                missing.append(f"{part} (a plain two-layer MLP)")
            elif part in ("W_Q", "W_K") and any(getattr(b, part) is None for b in self.blocks):
                missing.append(f"{part} (its heads are content-free)")
        if missing:
            raise SitesUnavailableError(f"{feature} needs {', '.join(missing)}; the {self.family} family has none")
