"""Where a lazy ``AttentionMaps`` gets its numbers: a ``MapSource`` computes any block
``[head, row, col]`` of one layer on request (``attnscope.models.lazy_maps.QKMapSource`` does it
from stored queries and keys). Nothing here imports torch: analyses see numpy blocks only.

``SelectedSource`` is a source restricted to some layers and heads (what ``AttentionMaps.select``
returns for lazy maps, without computing anything). A source may also offer ``hold(layer)``, a context
within which reading that layer again is cheap (``holding`` calls it where it exists).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class MapSource(Protocol):
    """Computes attention blocks on demand.

    ``shape``: ``(layer, head, query, key)`` of the full stack it stands for. ``nbytes``: what the
    source really holds (stored tensors, not the maps it can compute). ``block(layer, heads, rows,
    cols)`` returns float32 ``[len(heads), rows, cols]`` where each full row (all keys) sums to 1.
    """

    @property
    def shape(self) -> tuple[int, int, int, int]: ...

    @property
    def nbytes(self) -> int: ...

    def block(self, layer: int, heads: Sequence[int], rows: slice, cols: slice) -> np.ndarray: ...


class SelectedSource:
    """``source`` seen through layer and head index lists (positions in ``source``)."""

    def __init__(self, source: MapSource, layers: Sequence[int], heads: Sequence[int]):
        self.source = source
        self.layers = [int(i) for i in layers]
        self.heads = [int(i) for i in heads]

    @property
    def shape(self) -> tuple[int, int, int, int]:
        _, _, q, k = self.source.shape
        return (len(self.layers), len(self.heads), q, k)

    @property
    def nbytes(self) -> int:
        return self.source.nbytes

    def block(self, layer: int, heads: Sequence[int], rows: slice, cols: slice) -> np.ndarray:
        return self.source.block(self.layers[layer], [self.heads[h] for h in heads], rows, cols)

    def hold(self, layer: int) -> AbstractContextManager:
        return holding(self.source, self.layers[layer])


def holding(source: MapSource, layer: int) -> AbstractContextManager:
    """``source.hold(layer)`` where the source has one (it keeps what it computes a layer's blocks from
    while a caller reads that layer in several requests), else a context that does nothing."""
    hold = getattr(source, "hold", None)
    return nullcontext() if hold is None else hold(layer)
