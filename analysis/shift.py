"""Shift scan: how much of each head is a fixed relative offset (previous token, next token, ...).

For every head and every offset ``delta = key - query`` in ``[-k, k]`` (1D) or ``(drow, dcol)`` in a
``(2r+1) x (2r+1)`` window (2D, when ``maps.grid`` is set), the scan reports the mean attention mass
``mass[layer, head, offset] = mean_q A[q, q + delta]``, averaged over the query rows where that
offset exists (unlike TransformerLens' detector, rows without a target do not dilute the score) and
with special/sink positions (``maps.special``) left out of both rows and columns unless
``include_special``. It generalises the previous-token template (``delta = -1``) to every offset,
both signs, 1D and 2D. Masses are raw attention (not renormalised after dropping sink columns), so
a head that parks most of its mass on [CLS] cannot score as a shift.

Per head: the best offset and its mass, the runner-up and its mass, and
``shift_score = best_mass - runner_up_mass`` (1 for an exact shift matrix, 0 for a head that
spreads evenly over two or more offsets). A head is a shift head when
``shift_score >= threshold``. The spec's plain ``max_delta s(delta)`` is ``best_mass``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.offsets import OffsetIndex
from attnscope.analysis.passes import Reductions, reduce_maps

log = logging.getLogger(__name__)

DEFAULT_K = 8  # 1D half-width: offsets -8..8
DEFAULT_RADIUS = 3  # 2D: a 7 x 7 window of (drow, dcol)
DEFAULT_THRESHOLD = 0.5  # best mass must beat the runner-up by half a row


@dataclass(frozen=True)
class ShiftHead:
    """One head's scan result, for tables and JSON."""

    label: str  # L{layer}H{head}
    layer: int
    head: int
    offset: int | tuple[int, int]
    mass: float
    runner_up: int | tuple[int, int]
    runner_up_mass: float
    shift_score: float
    is_shift: bool


@dataclass(frozen=True)
class ShiftScan:
    """Result of ``scan_shifts``.

    Attributes:
        index: the offset table (``index.offsets`` is ``[offset]`` or ``[offset, 2]``).
        mass: ``[layer, head, offset]`` float32 in [0, 1]: mean ``A[q, q + offset]`` over valid rows.
        count: ``[offset]`` number of rows where each offset exists (mass is 0 where count is 0).
        best, runner_up: ``[layer, head]`` indices into ``index.offsets``.
        best_mass, runner_up_mass, shift_score: ``[layer, head]`` float32.
        is_shift: ``[layer, head]`` bool, ``shift_score >= threshold``.
        layer_ids, head_ids: original indices, for labels ``L{layer}H{head}``.
    """

    index: OffsetIndex
    mass: np.ndarray
    count: np.ndarray
    best: np.ndarray
    best_mass: np.ndarray
    runner_up: np.ndarray
    runner_up_mass: np.ndarray
    shift_score: np.ndarray
    is_shift: np.ndarray
    threshold: float
    layer_ids: tuple[int, ...]
    head_ids: tuple[int, ...]

    @property
    def offsets(self) -> np.ndarray:
        """``[offset]`` (1D) or ``[offset, 2]`` (2D) offsets, ``key - query``."""
        return self.index.offsets

    def offset(self, i: int) -> int | tuple[int, int]:
        """The offset at index ``i`` as a Python int or ``(drow, dcol)`` tuple."""
        o = self.index.offsets[int(i)]
        return (int(o[0]), int(o[1])) if self.index.is_2d else int(o)

    def mass_at(self, delta) -> np.ndarray:
        """``[layer, head]`` mass at one offset (an int, or ``(drow, dcol)`` in 2D)."""
        return self.mass[..., self.index.position(delta)]

    def head(self, layer: int, head: int) -> ShiftHead:
        """The record of one head (positional indices)."""
        return ShiftHead(
            label=f"L{self.layer_ids[layer]}H{self.head_ids[head]}",
            layer=int(self.layer_ids[layer]),
            head=int(self.head_ids[head]),
            offset=self.offset(self.best[layer, head]),
            mass=float(self.best_mass[layer, head]),
            runner_up=self.offset(self.runner_up[layer, head]),
            runner_up_mass=float(self.runner_up_mass[layer, head]),
            shift_score=float(self.shift_score[layer, head]),
            is_shift=bool(self.is_shift[layer, head]),
        )

    def shift_heads(self) -> list[ShiftHead]:
        """Records of the heads over the threshold, highest ``shift_score`` first."""
        li, hi = np.nonzero(self.is_shift)
        recs = [self.head(int(a), int(b)) for a, b in zip(li, hi, strict=True)]
        return sorted(recs, key=lambda r: -r.shift_score)


def shift_scan_from(red: Reductions, layer_ids, head_ids, threshold: float = DEFAULT_THRESHOLD) -> ShiftScan:
    """Build a ``ShiftScan`` from a pass that computed ``band`` (see ``passes.reduce_maps``)."""
    if red.band_sum is None:
        raise ValueError("the reductions have no 'band' part; call reduce_maps with parts={'band'}")
    idx = red.index
    count = idx.count
    mass = np.divide(red.band_sum, np.maximum(count, 1)).astype(np.float32)
    mass[..., count == 0] = 0.0
    np.clip(mass, 0.0, 1.0, out=mass)  # float rounding can put an exact 1 a hair above
    if mass.shape[-1] >= 2:
        order = np.argsort(-mass, axis=-1, kind="stable")
        best, runner = order[..., 0], order[..., 1]
    else:
        best = runner = np.zeros(mass.shape[:2], dtype=np.int64)
    best_mass = np.take_along_axis(mass, best[..., None], -1)[..., 0]
    runner_mass = np.take_along_axis(mass, runner[..., None], -1)[..., 0]
    if mass.shape[-1] < 2:
        runner_mass = np.zeros_like(best_mass)
    score = (best_mass - runner_mass).astype(np.float32)
    return ShiftScan(
        index=idx,
        mass=mass,
        count=count,
        best=best,
        best_mass=best_mass,
        runner_up=runner,
        runner_up_mass=runner_mass,
        shift_score=score,
        is_shift=score >= threshold,
        threshold=float(threshold),
        layer_ids=tuple(layer_ids),
        head_ids=tuple(head_ids),
    )


def scan_shifts(
    maps: AttentionMaps,
    k: int = DEFAULT_K,
    radius: int = DEFAULT_RADIUS,
    threshold: float = DEFAULT_THRESHOLD,
    include_special: bool = False,
    workers: int | None = None,
) -> ShiftScan:
    """Scan every head of ``maps`` (``[layer, head, query, key]``) for fixed relative offsets.

    ``k``: 1D offsets ``-k..k``; ``radius``: 2D window ``(2r+1)^2`` (used when ``maps.grid`` is set);
    ``threshold``: minimum ``shift_score`` of a shift head; ``include_special``: keep CLS/SEP rows
    and columns in the 1D scan (they are never on the 2D grid). Returns ``mass[layer, head, offset]``.
    """
    red = reduce_maps(maps, {"band"}, k=k, radius=radius, include_special=include_special, workers=workers)
    return shift_scan_from(red, maps.layer_ids, maps.head_ids, threshold)
