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

from collections.abc import Callable, Sequence
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


def layer_thumbnails(maps: AttentionMaps, layer: int, cells: int = CELLS) -> tuple[np.ndarray, np.ndarray]:
    """One layer's ``(means [head, R, R], key_means [head, R, len(keys)])`` (see ``Thumbnails``)."""
    n = maps.n_tokens
    return pooled_with_keys(maps, layer, None, (0, n), (0, n), thumbnail_stride(n, cells), "mean", hideable_keys(maps))


def compute_thumbnails(
    maps: AttentionMaps,
    cells: int = CELLS,
    check: Callable[[], None] | None = None,
    layers: Sequence[int] | None = None,
    done: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
) -> Thumbnails:
    """The thumbnails of ``maps`` ``[layer, head, query, key]`` (see ``Thumbnails``) for ``layers``
    (default all, in that order), a layer at a time; ``check()`` is called before each layer (a
    cancellation raises there). ``done`` (layer -> one layer's pair) holds layers already computed
    and receives each new one, so that a pass stopped by a cancellation resumes where it stopped."""
    done = {} if done is None else done
    layers = list(range(maps.n_layers)) if layers is None else [int(layer) for layer in layers]
    for layer in layers:
        if layer not in done:
            if check is not None:
                check()
            done[layer] = layer_thumbnails(maps, layer, cells)
    stride, keys = thumbnail_stride(maps.n_tokens, cells), hideable_keys(maps)
    return Thumbnails(stride, keys, np.stack([done[i][0] for i in layers]), np.stack([done[i][1] for i in layers]))
