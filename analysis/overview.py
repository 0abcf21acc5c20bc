"""Every structural analysis of one example from a single pass over its maps.

``overview(maps)`` runs ``passes.reduce_maps`` once with all parts and derives the shift scan, the
implied convolutions, head types, attention distance, the evolution statistics and the rollout
importance of the CLS-like row (or the mean row), so a page that shows all of them reads the
``[layer, head, query, key]`` tensor once instead of once per analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnscope.analysis.distance import AttentionDistance, distance_from
from attnscope.analysis.evolution import Evolution, evolution_from
from attnscope.analysis.heads import HeadTypes, head_types_from
from attnscope.analysis.implied_conv import ImpliedConvolution, convolution_from
from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.passes import PARTS, reduce_maps
from attnscope.analysis.rollout import TokenImportance, rollout_importance
from attnscope.analysis.shift import DEFAULT_K, DEFAULT_RADIUS, DEFAULT_THRESHOLD, ShiftScan, shift_scan_from


@dataclass(frozen=True)
class Overview:
    """The results of the single-pass analyses (see each type for shapes)."""

    scan: ShiftScan
    convolution: ImpliedConvolution
    types: HeadTypes
    distance: AttentionDistance
    evolution: Evolution
    rollout: TokenImportance


def overview(
    maps: AttentionMaps,
    *,
    k: int = DEFAULT_K,
    radius: int = DEFAULT_RADIUS,
    threshold: float = DEFAULT_THRESHOLD,
    include_special: bool = False,
    rollout_row: int | None = -1,
    workers: int | None = None,
) -> Overview:
    """Shift scan (``k``/``radius``/``threshold``), kernels, head types, distance, evolution and
    rollout importance (``rollout_row``: -1 = CLS-like row, None = mean row) of ``maps``."""
    red = reduce_maps(maps, PARTS, k=k, radius=radius, include_special=include_special, workers=workers)
    scan = shift_scan_from(red, maps.layer_ids, maps.head_ids, threshold)
    return Overview(
        scan=scan,
        convolution=convolution_from(red, maps.layer_ids, maps.head_ids),
        types=head_types_from(red, maps, scan),
        distance=distance_from(red, maps),
        evolution=evolution_from(red, maps),
        rollout=rollout_importance(maps, rollout_row, head_mean=red.head_mean),
    )
