"""Attention distance: how far each head looks (ViT's "mean attention distance", Dosovitskiy et al.).

``per_head[layer, head] = sum_{q,k} A[q, k] d(q, k) / sum_{q,k} A[q, k]`` over non-special query rows
and keys, with ``d = |k - q|`` in tokens (1D) or the Euclidean distance between grid cells (2D,
``maps.grid``). Attention on special positions has no position and is left out; the division
makes the result a mean distance of the remaining mass. On causal maps the first row (one key,
itself: distance 0 by force) is left out. ``per_layer[layer]`` averages the heads
(the profile to plot against depth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.passes import Reductions, reduce_maps


@dataclass(frozen=True)
class AttentionDistance:
    """``per_head`` ``[layer, head]`` and ``per_layer`` ``[layer]`` mean distances in ``unit``."""

    per_head: np.ndarray
    per_layer: np.ndarray
    unit: str  # "tokens" or "grid cells"
    layer_ids: tuple[int, ...]
    head_ids: tuple[int, ...]


def distance_from(red: Reductions, maps: AttentionMaps) -> AttentionDistance:
    """``AttentionDistance`` from a pass with the ``distance`` and ``special`` parts. The kept mass
    of a row is ``1 - sum(A[q, specials])`` (rows sum to 1 by ``AttentionMaps``' contract)."""
    if red.distance_sum is None or red.special_cols is None:
        raise ValueError("attention distance needs the 'distance' and 'special' parts")
    sp = list(maps.special)
    cols = red.special_cols  # [layer, head, special, query]
    lost = cols.sum(axis=(-2, -1), dtype=np.float64) - cols[..., sp].sum(axis=(-2, -1), dtype=np.float64)
    mass = (maps.n_tokens - len(sp)) - lost
    if maps.causal and 0 not in maps.special:  # the forced first row: mass 1 at distance 0
        mass = mass - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        per_head = np.where(mass > 1e-9, red.distance_sum / np.where(mass > 1e-9, mass, 1.0), 0.0)
    per_head = per_head.astype(np.float32)
    return AttentionDistance(
        per_head=per_head,
        per_layer=per_head.mean(axis=1),
        unit="grid cells" if maps.grid is not None else "tokens",
        layer_ids=tuple(maps.layer_ids),
        head_ids=tuple(maps.head_ids),
    )


def attention_distance(maps: AttentionMaps, workers: int | None = None) -> AttentionDistance:
    """Mean attention distance per head and per layer of ``maps`` (``[layer, head, query, key]``)."""
    return distance_from(reduce_maps(maps, {"distance", "special"}, workers=workers), maps)
