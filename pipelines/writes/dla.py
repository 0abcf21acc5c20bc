"""Direct logit attribution (TransformerLens ``decompose_resid`` / ``stack_head_results`` +
``apply_ln_to_stack`` + ``logit_attrs``; derivation in ``docs/methods/direct-logit-attribution.md``).

In a pre-norm transformer the last residual stream at position ``i`` is a sum of what each part
wrote there,

    x_i = embed_i + sum_l ( sum_h z_{l,h,i} W_O[l,h] + b_O[l] + mlp_{l,i} ),

and each head's output is itself a sum over the keys it read, ``z_{l,h,i} = sum_j a_{l,h,i,j}
v_{l,h,j}``. With the final norm's scale frozen at its clean value (``frozen_norm``) the target
logit (or the difference of two logits) is ``x_i . r + beta . u + b_U[t]``, so it splits into
``part . r`` per part, and each head's share into ``a_ij (v_j W_O) . r`` per source ``j``: exact
sums, checked by ``Attribution.residual_error`` against the recorded residual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnscope.pipelines.writes.frozen_norm import FinalNorm
from attnscope.pipelines.writes.lens import Unembedding


@dataclass(frozen=True)
class BlockWrites:
    """What block ``l`` wrote at the target position ``i``.

    ``z [head, d_head]``: each head's output before the output projection; ``W_O [head, d_head,
    d_model]``; ``b_O [d_model]`` or None; ``mlp [d_model]``: the MLP's output (its biases included);
    for the per-source split, ``probs [head, key]`` (row ``i`` of the head's attention) and
    ``values [kv_head, key, d_head]`` (query head ``h`` reads value head ``h // (head / kv_head)``),
    or both None.
    """

    z: torch.Tensor
    W_O: torch.Tensor
    b_O: torch.Tensor | None
    mlp: torch.Tensor
    probs: torch.Tensor | None = None
    values: torch.Tensor | None = None


@dataclass(frozen=True)
class Attribution:
    """The parts of one logit (or logit difference) at one position.

    ``logit``: the value computed from the recorded residual through the real norm; ``embed``;
    ``heads [layer, head]``; ``attn_bias [layer]`` (``b_O . r``; 0 without one); ``mlp [layer]``;
    ``bias``: ``beta . u + b_U[t] (- b_U[t'])``; ``sources [layer, head, key]`` or None (each head's
    share split over its keys; ``sources.sum(-1) == heads``); ``scale``: the frozen norm scale;
    ``residual_error``: ``logit - sum of every part`` (float32 rounding when the model is the sum of
    its parts; large when it is not, e.g. a norm after a sub-layer that the table does not declare).
    ``norm_bias [layer]`` or None: a post-norm block's LayerNorm biases read through the later frozen
    norms (``class_readout``; pre-norm blocks add none to the stream).
    """

    logit: float
    embed: float
    heads: np.ndarray
    attn_bias: np.ndarray
    mlp: np.ndarray
    bias: float
    sources: np.ndarray | None
    scale: float
    residual_error: float
    norm_bias: np.ndarray | None = None

    def total(self) -> float:
        """The sum of every part (``logit - residual_error``)."""
        blocks = self.heads.sum() + self.attn_bias.sum() + self.mlp.sum()
        return float(self.embed + blocks + self.bias + (0.0 if self.norm_bias is None else self.norm_bias.sum()))


def logit_direction(unembed: Unembedding, target: int, contrast: int | None = None) -> tuple[torch.Tensor, float]:
    """``(u [d_model], b)``: the unembedding column of ``target`` minus that of ``contrast`` (if any),
    and the matching unembedding-bias difference."""
    vocab = unembed.vocab
    for name, tok in (("target", target), ("contrast", contrast)):
        if tok is not None and not 0 <= int(tok) < vocab:
            raise ValueError(f"{name} token id {tok} is outside [0, {vocab})")
    u = unembed.weight[:, int(target)].float()
    b = 0.0 if unembed.bias is None else float(unembed.bias[int(target)])
    if contrast is not None:
        u = u - unembed.weight[:, int(contrast)].float()
        b -= 0.0 if unembed.bias is None else float(unembed.bias[int(contrast)])
    return u, b


def head_readouts(W_O: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """``W_O [head, d_head, d_model]``, ``r [d_model]`` -> ``[head, d_head]``: ``W_O[h] @ r``."""
    return torch.einsum("hdm,m->hd", W_O.float(), r)


def source_split(probs: torch.Tensor, values: torch.Tensor, readouts: torch.Tensor) -> torch.Tensor:
    """``probs [head, key]``, ``values [kv_head, key, d_head]``, ``readouts [head, d_head]`` ->
    ``[head, key]``: ``a_hj (v_j . W_O[h] r)``, each head's share split over its keys."""
    n_heads, n_kv = probs.shape[0], values.shape[0]
    if n_heads % n_kv:
        raise ValueError(f"{n_heads} query heads cannot share {n_kv} value heads")
    v = values.float().repeat_interleave(n_heads // n_kv, dim=0)  # [head, key, d_head]
    return probs.float() * torch.einsum("hkd,hd->hk", v, readouts)


@torch.inference_mode()
def direct_logit_attribution(
    embed: torch.Tensor,
    blocks: Sequence[BlockWrites],
    final_resid: torch.Tensor,
    norm: FinalNorm,
    unembed: Unembedding,
    target: int,
    contrast: int | None = None,
) -> Attribution:
    """Attribute ``logit[target] (- logit[contrast])`` at one position to its parts.

    Args:
        embed: ``[d_model]`` the residual entering block 0 (token + position embeddings).
        blocks: one ``BlockWrites`` per block, in order.
        final_resid: ``[d_model]`` the residual leaving the last block (before the final norm); its
            norm scale is the frozen scale.
        norm: the final norm; unembed: the unembedding.
        target, contrast: token ids.
    """
    u, b_u = logit_direction(unembed, target, contrast)
    x = final_resid.float()
    s = norm.scale(x)
    r = norm.readout(u, s)
    bias = float(norm.bias_term(u)) + b_u
    logit = float(norm(x) @ u) + b_u
    heads, attn_bias, mlp, sources = [], [], [], []
    split = all(blk.probs is not None and blk.values is not None for blk in blocks)
    for blk in blocks:
        ro = head_readouts(blk.W_O, r)  # [head, d_head]
        heads.append((blk.z.float() * ro).sum(-1))
        attn_bias.append(torch.zeros((), device=r.device) if blk.b_O is None else blk.b_O.float() @ r)
        mlp.append(blk.mlp.float() @ r)
        if split:
            sources.append(source_split(blk.probs, blk.values, ro))
    emb = float(embed.float() @ r)
    out = Attribution(
        logit=logit,
        embed=emb,
        heads=torch.stack(heads).cpu().numpy() if heads else np.zeros((0, 0), np.float32),
        attn_bias=torch.stack(attn_bias).cpu().numpy() if attn_bias else np.zeros(0, np.float32),
        mlp=torch.stack(mlp).cpu().numpy() if mlp else np.zeros(0, np.float32),
        bias=bias,
        sources=torch.stack(sources).cpu().numpy() if split and sources else None,
        scale=float(s),
        residual_error=0.0,
    )
    return Attribution(**{**out.__dict__, "residual_error": logit - out.total()})
