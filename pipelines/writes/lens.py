"""The logit lens (nostalgebraist 2020; TransformerLens ``accumulated_resid(apply_ln=True)`` followed by
the unembedding): each layer's residual stream read as if it were the last, through the final norm
and the unembedding.

Each residual is normalised with its *own* scale (the norm is applied as the model would apply it
to that vector), so the lens of the last residual is the model's own next-token distribution.
Rows ``[n, d_model]`` may be any stack of residuals (layers x positions flattened); they are
processed in chunks so that at most ``CHUNK_ROWS x vocab`` logits are alive at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.pipelines.writes.frozen_norm import FinalNorm

CHUNK_ROWS = 64


@dataclass(frozen=True)
class Unembedding:
    """``weight [d_model, vocab]`` (a transposed view of a tied embedding is fine) and ``bias [vocab]``
    or None."""

    weight: torch.Tensor
    bias: torch.Tensor | None = None

    @property
    def vocab(self) -> int:
        return int(self.weight.shape[1])

    def logits(self, normed: torch.Tensor) -> torch.Tensor:
        """``normed [..., d_model]`` -> float32 ``[..., vocab]``."""
        out = normed.float() @ self.weight.float()
        return out if self.bias is None else out + self.bias.float()


@dataclass(frozen=True)
class LensRows:
    """The lens of ``n`` residuals: ``top_ids``/``top_probs [n, k]`` (most probable first),
    ``target [n]`` token ids, ``target_prob [n]``, ``target_rank [n]`` (0: the top token; the number
    of tokens with a larger logit), ``entropy [n]`` (nats)."""

    top_ids: np.ndarray
    top_probs: np.ndarray
    target: np.ndarray
    target_prob: np.ndarray
    target_rank: np.ndarray
    entropy: np.ndarray


def lens_logits(resid: torch.Tensor, norm: FinalNorm, unembed: Unembedding) -> torch.Tensor:
    """float32 ``[..., vocab]`` logits of residuals ``resid [..., d_model]`` (each with its own scale)."""
    return unembed.logits(norm(resid))


@torch.inference_mode()
def logit_lens(
    resid: torch.Tensor,
    norm: FinalNorm,
    unembed: Unembedding,
    k: int,
    target: torch.Tensor | None = None,
) -> LensRows:
    """Top-``k`` tokens of each residual ``resid [n, d_model]`` and the probability and rank of
    ``target [n]`` (long; default: each row's own top token).

    Raises:
        ValueError: ``k`` outside ``[1, vocab]``, a target out of the vocabulary, or shapes that disagree.
    """
    if resid.dim() != 2:
        raise ValueError(f"resid must be [n, d_model], got {tuple(resid.shape)}")
    n = int(resid.shape[0])
    vocab = unembed.vocab
    if not 1 <= k <= vocab:
        raise ValueError(f"k={k} is outside [1, {vocab}] (the vocabulary size)")
    if target is not None:
        target = torch.as_tensor(target, dtype=torch.long, device=resid.device).reshape(-1)
        if target.shape[0] != n:
            raise ValueError(f"{target.shape[0]} targets for {n} residual rows")
        if n and (int(target.min()) < 0 or int(target.max()) >= vocab):
            raise ValueError(f"target ids must lie in [0, {vocab})")
    chunks = [
        _summary(lens_logits(resid[a : a + CHUNK_ROWS], norm, unembed), k, None if target is None else target[a:])
        for a in range(0, n, CHUNK_ROWS)
    ]
    return _rows(chunks, k)


def _summary(logits: torch.Tensor, k: int, target: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
    """``logits [c, vocab]`` -> ``(top_ids [c, k], top_probs [c, k], target [c], target_prob [c],
    target_rank [c], entropy [c])`` (``target`` long ``[>= c]``; default each row's top id)."""
    logp = torch.log_softmax(logits, dim=-1)
    vals, ids = torch.topk(logp, k, dim=-1)
    t = ids[:, 0] if target is None else target[: logits.shape[0]]
    t_logit = logits.gather(1, t[:, None])  # [c, 1]
    entropy = -(logp.exp() * logp).nan_to_num(0.0).sum(dim=-1)
    return ids, vals.exp(), t, logp.gather(1, t[:, None])[:, 0].exp(), (logits > t_logit).sum(dim=-1), entropy


@torch.inference_mode()
def rows_of_logits(logits: torch.Tensor, k: int, target: torch.Tensor | None = None) -> LensRows:
    """``LensRows`` of ready logits ``[n, vocab | classes]`` (a class lens's rows), ``target [n]`` long."""
    if not 1 <= k <= logits.shape[1]:
        raise ValueError(f"k={k} is outside [1, {logits.shape[1]}]")
    return _rows([_summary(logits.float(), k, target)], k)


def _rows(chunks: list[tuple[torch.Tensor, ...]], k: int) -> LensRows:
    top_ids, top_probs, tgt, tgt_prob, tgt_rank, ent = (list(c) for c in zip(*chunks)) if chunks else ([],) * 6

    def cat(xs: list[torch.Tensor], dtype: type, width: int | None = None) -> np.ndarray:
        if not xs:
            return np.zeros((0,) if width is None else (0, width), dtype=dtype)
        return torch.cat(xs).cpu().numpy().astype(dtype)

    return LensRows(
        top_ids=cat(top_ids, np.int64, k),
        top_probs=cat(top_probs, np.float32, k),
        target=cat(tgt, np.int64),
        target_prob=cat(tgt_prob, np.float32),
        target_rank=cat(tgt_rank, np.int64),
        entropy=cat(ent, np.float32),
    )
