"""Evolution's layer-to-layer similarity and attention rollout without keeping the head means.

Both read the head-averaged maps ``W[layer] = mean_h A[layer, h]`` (``[query, key]`` each). The
shared structure pass (``analysis.passes``, part ``mean``) keeps all of them, ``[layer, query,
key]``: 0.5 GiB for SmolLM2 at 2,048 tokens, 2 GiB at 4,096. ``walk_head_means`` instead walks the
layers once from the top down, forms one layer's ``W`` at a time (a band of rows at a time from lazy
maps) and keeps only that layer and the one above it (two ``[query, key]`` arrays), which is all
that either analysis needs:

- **similarity of consecutive layers** (``evolution.layer_similarity``): the Jensen-Shannon divergence
  of the rows of ``W[l]`` and ``W[l + 1]`` (mean over rows) and the cosine of the two flattened maps.
- **rollout** (Abnar & Zuidema 2020; ``rollout.rollout_importance``): row ``r`` of
  ``R = Ahat[t] ... Ahat[0]`` with ``Ahat = W / 2 + I / 2`` is the vector ``v = e_r`` multiplied by
  each ``Ahat`` from layer ``t`` down to 0. Walking from the top, the vector of every ``t`` is carried
  at once: at layer ``l`` the vectors of ``t >= l`` are multiplied by ``Ahat[l]`` and the one of
  ``t = l`` starts there, so one walk answers rollout *through every layer* for the rows asked
  (``O(layers^2 * rows * n^2 / 2)`` multiply-adds, a few GFLOP at 4,096 tokens).

Memory: four ``[query, key]`` float32 arrays (the two layers, a buffer and a scratch for the
logarithms) plus the lazy maps' band, whatever the depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.analysis import passes
from attnscope.analysis.evolution import pair_similarity
from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.passes import _rowdot, row_entropy


@dataclass(frozen=True)
class MeanWalk:
    """What one walk over the head means gives.

    ``js_next``/``cosine_next`` ``[layer - 1]``: consecutive head-mean maps compared (as
    ``evolution.layer_similarity``); ``rollout[row]`` ``[through_layer, key]``: rollout importance of
    ``row`` (a position, or None for the mean over rows) through layers ``0..through_layer``."""

    js_next: np.ndarray
    cosine_next: np.ndarray
    rollout: dict[int | None, np.ndarray]


def _layer_mean(maps: AttentionMaps, li: int, out: np.ndarray, check, tick) -> None:
    """``out [query, key]`` = layer ``li``'s head average, a band of rows at a time."""
    n_head, n = maps.n_heads, maps.n_tokens
    weights = np.full(n_head, 1.0 / n_head, dtype=np.float32)
    rows = n if not maps.is_lazy else max(1, passes.LAZY_BAND_BYTES // (4 * n_head * n))
    for b0 in range(0, n, rows):
        if check is not None:
            check()
        b1 = min(n, b0 + rows)
        if maps.is_lazy:
            band = np.ascontiguousarray(maps.block(li, rows=slice(b0, b1)), dtype=np.float32)
        else:
            band = np.ascontiguousarray(maps.weights[li, :, b0:b1], dtype=np.float32)
        np.matmul(weights, band.reshape(n_head, -1), out=out[b0:b1].reshape(-1))  # [head] @ [head, rows * key]
        tick()


def walk_head_means(maps: AttentionMaps, rows=(None,), check=None, progress=None) -> MeanWalk:
    """One top-down walk over ``maps`` ``[layer, head, query, key]`` (see the module docstring).

    ``rows``: the rollout rows wanted (positions, or None for the mean over rows). ``check()``, when
    given, is called before each band of rows (it raises to stop the walk); ``progress(done, total)``
    after each (bands done out of ``layers x bands per layer``)."""
    n_layer, n_head, n, _ = maps.shape
    rows = tuple(dict.fromkeys(rows))
    for r in rows:
        if r is not None and not 0 <= int(r) < n:
            raise ValueError(f"rollout row {r} is outside 0..{n - 1}")
    band_rows = n if not maps.is_lazy else max(1, passes.LAZY_BAND_BYTES // (4 * n_head * n))
    total, done = n_layer * -(-n // band_rows), [0]

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    upper, lower = np.empty((n, n), np.float32), np.empty((n, n), np.float32)
    mid, scratch = np.empty((n, n), np.float32), np.empty((n, n), np.float32)
    starts = np.zeros((len(rows), n), np.float32)  # each row's starting vector: e_r, or uniform
    for i, r in enumerate(rows):
        if r is None:
            starts[i] = 1.0 / n
        else:
            starts[i, int(r)] = 1.0
    carried = np.zeros((n_layer, len(rows), n), np.float32)  # [through layer, row, key]
    js = np.zeros(max(0, n_layer - 1), np.float32)
    dots = np.zeros(max(0, n_layer - 1))
    sq = np.zeros(n_layer)
    h_upper = None
    for li in range(n_layer - 1, -1, -1):
        _layer_mean(maps, li, lower, check, tick)
        carried[li] = starts
        v = carried[li:].reshape(-1, n)  # every vector that has reached layer li: v Ahat = v W / 2 + v / 2
        v[:] = np.float32(0.5) * (v @ lower) + np.float32(0.5) * v
        h_lower = row_entropy(lower, scratch)
        sq[li] = float(_rowdot(lower, lower).sum(dtype=np.float64))
        if h_upper is not None:
            js[li], dots[li] = pair_similarity(upper, lower, h_upper, h_lower, mid, scratch)
        upper, lower, h_upper = lower, upper, h_lower
    den = np.sqrt(sq[:-1] * sq[1:])
    cos = np.divide(dots, den, out=np.zeros_like(dots), where=den > 0).astype(np.float32)
    return MeanWalk(js_next=js, cosine_next=cos, rollout={r: carried[:, i].copy() for i, r in enumerate(rows)})
