"""What a batched forward pass of any backend gives (``Backend.forward_batch``): the model's raw
output for engines that compare passes (interventions), with the maps when asked.

``forward_batch`` runs inside whatever request session the caller opened
(``attnscope.models.session``), so attention hooks, site edits and a start block apply to it; it
never looks at them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch


@dataclass
class BatchOutput:
    """One batched forward, ``B`` rows.

    ``kind``: ``classification`` (``logits [B, classes]``), ``embedding`` (``embedding [B, D]``,
    L2-normalised pooling as the backend's own output) or ``next-token`` (``logits [B, P, vocab]``
    at the kept positions ``positions``, float32). ``maps``: per row ``[layer, head, query, key]``
    float32 cut to its length and renormalised (when asked). ``lengths [B]``: real positions.
    """

    kind: Literal["classification", "embedding", "next-token"]
    lengths: list[int]
    logits: torch.Tensor | None = None
    embedding: torch.Tensor | None = None
    positions: tuple[int, ...] | None = None
    maps: list[np.ndarray] | None = None


def cut_maps(att: np.ndarray, lengths: list[int], always: bool = False) -> list[np.ndarray]:
    """``att [B, layer, head, N, N]`` -> per row ``[layer, head, n, n]`` (padding keys dropped, rows
    renormalised over the kept keys; with ``always`` every row is renormalised)."""
    out = []
    for b, n in enumerate(lengths):
        w = att[b, :, :, :n, :n]
        if always or n != att.shape[-1]:
            w = w / np.maximum(w.sum(-1, keepdims=True), 1e-30)
        out.append(np.ascontiguousarray(w))
    return out
