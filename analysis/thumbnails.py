"""The model view's thumbnails of a run: every head's map mean-pooled to at most ``CELLS x CELLS``,
with each block of rows' mean weight on the keys a view may hide (the first token and the special
positions), read in one pass over the maps (a lazy run computes each layer once, a chunk of rows at
a time: ``analysis.slices.pooled_with_keys``).

With the key weights a view hides keys without another read: a pooled cell's row block gives
``1 - sum(key_means)`` of its weight to the other keys, so dividing the block's row by it
renormalises (``frontend.sink_hiding.renormalise``; exact for one row, an approximation for a block
of rows, as pooled).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.slices import pooled_with_keys

CELLS = 64  # cells per side at most


@dataclass(frozen=True)
class Thumbnails:
    """``means [layer, head, R, R]`` float32 (``R = ceil(n / stride)``): each ``stride x stride``
    block's mean weight (a block cut by the edge averages the cells it has); ``key_means [layer, head,
    R, len(keys)]``: each block of ``stride`` rows' mean weight on each key of ``keys`` (absolute
    positions: 0 and the run's special positions, sorted)."""

    stride: int
    keys: tuple[int, ...]
    means: np.ndarray
    key_means: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.means.nbytes + self.key_means.nbytes)


def thumbnail_stride(n_tokens: int, cells: int = CELLS) -> int:
    """The pooling stride that fits ``n_tokens`` positions into ``cells`` per side."""
    return max(1, -(-n_tokens // cells))


def hideable_keys(maps: AttentionMaps) -> tuple[int, ...]:
    """The keys a view may hide: the first token and the special positions, sorted."""
    return tuple(sorted({0, *(int(p) for p in maps.special if 0 <= int(p) < maps.n_tokens)}))


def compute_thumbnails(maps: AttentionMaps, cells: int = CELLS, check: Callable[[], None] | None = None) -> Thumbnails:
    """The thumbnails of ``maps`` ``[layer, head, query, key]`` (see ``Thumbnails``), a layer at a
    time; ``check()`` is called before each layer (a cancellation raises there)."""
    n = maps.n_tokens
    stride, keys = thumbnail_stride(n, cells), hideable_keys(maps)
    means, key_means = [], []
    for layer in range(maps.n_layers):
        if check is not None:
            check()
        pooled, on_keys = pooled_with_keys(maps, layer, None, (0, n), (0, n), stride, "mean", keys)
        means.append(pooled)
        key_means.append(on_keys)
    return Thumbnails(stride, keys, np.stack(means), np.stack(key_means))
