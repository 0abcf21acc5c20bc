"""Value-weighted attention maps (Kobayashi et al. 2020, "Attention is not only a weight: analyzing
transformers with vector norms", EMNLP): the size of what key ``j`` adds to query ``i``'s output,

    m[h, i, j] = || a[h, i, j] v[h, j] W_O[h] || = a[h, i, j] * || v[h, j] W_O[h] ||

(``a >= 0``; ``v`` includes the value bias; the output bias is added once after the sum and belongs
to no key). The norms ``||v_j W_O[h]||`` are one number per head and key, computed through the Gram
matrix ``G_h = W_O[h] W_O[h]^T [d_head, d_head]`` (never a ``[key, d_model]`` tensor), so a block of
the map costs what a block of the weights costs. ``ValueWeightedSource`` serves blocks from any
weights ``MapSource`` (``attnscope.analysis.map_source``) without storing a map.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def value_norms(values: torch.Tensor, W_O: torch.Tensor) -> torch.Tensor:
    """``values [kv_head, key, d_head]``, ``W_O [head, d_head, d_model]`` -> float32 ``[head, key]``:
    ``||v[kv(h), j] W_O[h]||`` with ``kv(h) = h // (head / kv_head)`` (grouped-query attention)."""
    n_heads, n_kv = W_O.shape[0], values.shape[0]
    if n_heads % n_kv:
        raise ValueError(f"{n_heads} query heads cannot share {n_kv} value heads")
    W = W_O.float()
    gram = W @ W.transpose(1, 2)  # [head, d_head, d_head]
    v = values.float().repeat_interleave(n_heads // n_kv, dim=0)  # [head, key, d_head]
    sq = torch.einsum("hkd,hde,hke->hk", v, gram, v)
    return sq.clamp_min(0.0).sqrt()


class ValueWeightedSource:
    """Blocks ``[head, rows, cols]`` of ``a_ij ||v_j W_O||`` (``normalize=False``) or of the same
    divided by its row sum over every key (``normalize=True``: rows sum to 1, comparable with the
    weights), from a weights source and one ``[head, key]`` norm table per layer.

    ``weights``: any object with ``shape (layer, head, query, key)`` and ``block(layer, heads, rows,
    cols) -> [len(heads), rows, cols]`` (a ``MapSource``); ``norms``: one float32 ``[head, key]``
    array per layer (``value_norms``).
    """

    def __init__(self, weights, norms: Sequence[np.ndarray], normalize: bool = False):
        n_layers, n_heads, _, n_keys = weights.shape
        if len(norms) != n_layers:
            raise ValueError(f"{len(norms)} norm tables for {n_layers} layers")
        for i, nm in enumerate(norms):
            if tuple(nm.shape) != (n_heads, n_keys):
                raise ValueError(f"layer {i}: norms {tuple(nm.shape)} are not [head, key] = {(n_heads, n_keys)}")
        self.weights = weights
        self.norms = [np.asarray(nm, dtype=np.float32) for nm in norms]
        self.normalize = normalize

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return tuple(self.weights.shape)

    @property
    def nbytes(self) -> int:
        return int(self.weights.nbytes) + sum(nm.nbytes for nm in self.norms)

    def block(self, layer: int, heads: Sequence[int], rows: slice, cols: slice) -> np.ndarray:
        """float32 ``[len(heads), rows, cols]`` of ``layer``."""
        heads = list(heads)
        nm = self.norms[layer][heads]  # [h, key]
        if not self.normalize:
            return self.weights.block(layer, heads, rows, cols) * nm[:, None, cols]
        full = self.weights.block(layer, heads, rows, slice(None)) * nm[:, None, :]  # [h, rows, key]
        total = full.sum(-1, keepdims=True)
        full = np.divide(full, total, out=np.zeros_like(full), where=total > 0)
        return full[:, :, cols]
