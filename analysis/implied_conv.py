"""Implied convolution of each head (Andreoli; Cordonnier et al.).

A grid convolution is a sum of fixed shift matrices, ``sum_delta theta_delta * S_delta`` with
``S_delta[q, k] = 1 iff k = q + delta`` (zero padded; ``S_(dr, dc) = S_dr (x) S_dc`` on a row-major
grid). An attention head is a convolution whose structure is computed from content. Projecting a
head's map onto the span of the shift basis says how much of it is a fixed convolution:

- ``coef[layer, head, offset]``: least-squares coefficients of the map on ``{S_delta}``, with
  special rows and columns left out as in the shift scan. The restricted shift matrices have
  disjoint supports, so the projection is closed-form: ``coef`` is the mean of ``A[q, q + delta]``
  over the rows where ``delta`` exists (= ``ShiftScan.mass``).
- ``r2[layer, head]``: uncentred R^2 = ``||P||^2 / ||A||^2`` over the same block, ``P`` the
  projection; 1 for a fixed convolution inside the window, near 0 for content-driven heads.
- ``kernel[layer, head, *kernel_shape]``: the mass a query puts at each offset, averaged over all
  valid query rows (a missing border cell counts 0): ``coef * count / n_rows``. It sums to at most
  1 and is the patch to draw (``[2k+1]`` in 1D, ``[2r+1, 2r+1]`` in 2D). ``coef`` itself can sum to
  slightly more than 1 because border rows are averaged over fewer cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.offsets import OffsetIndex
from attnscope.analysis.passes import Reductions, reduce_maps
from attnscope.analysis.shift import DEFAULT_K, DEFAULT_RADIUS


@dataclass(frozen=True)
class ImpliedConvolution:
    """Per-head implied kernels and the shift-basis decomposition. Shapes in the module docstring."""

    index: OffsetIndex
    coef: np.ndarray  # [layer, head, offset] float32
    kernel: np.ndarray  # [layer, head, *kernel_shape] float32
    r2: np.ndarray  # [layer, head] float32 in [0, 1]
    residual: np.ndarray  # [layer, head] float32: ||A - P||_F over the block
    layer_ids: tuple[int, ...]
    head_ids: tuple[int, ...]

    def projection(self, layer: int, head: int) -> np.ndarray:
        """The head's projection ``P = sum_delta coef[delta] S_delta`` as an ``[n, n]`` matrix
        (rows and columns outside the block are 0)."""
        idx = self.index
        p = np.zeros(idx.n * idx.n, dtype=np.float32)
        p[idx.flat] = np.repeat(self.coef[layer, head], idx.count)
        return p.reshape(idx.n, idx.n)


def convolution_from(red: Reductions, layer_ids, head_ids) -> ImpliedConvolution:
    """Build an ``ImpliedConvolution`` from a pass with the ``band`` and ``energy`` parts."""
    if red.band_sum is None or red.energy is None:
        raise ValueError("the reductions need the 'band' and 'energy' parts")
    idx = red.index
    count = idx.count.astype(np.float64)
    coef = np.where(count > 0, red.band_sum / np.maximum(count, 1.0), 0.0)
    n_rows = max(idx.rows.size, 1)
    kernel = (red.band_sum / n_rows).reshape(*coef.shape[:2], *idx.kernel_shape)
    proj_energy = (coef**2 * count).sum(-1)
    energy = np.maximum(red.energy, proj_energy)  # equal up to rounding when A is inside the span
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where(energy > 0, proj_energy / energy, 0.0)
    residual = np.sqrt(np.maximum(energy - proj_energy, 0.0))
    return ImpliedConvolution(
        index=idx,
        coef=coef.astype(np.float32),
        kernel=kernel.astype(np.float32),
        r2=np.clip(r2, 0.0, 1.0).astype(np.float32),
        residual=residual.astype(np.float32),
        layer_ids=tuple(layer_ids),
        head_ids=tuple(head_ids),
    )


def implied_convolution(
    maps: AttentionMaps,
    k: int = DEFAULT_K,
    radius: int = DEFAULT_RADIUS,
    include_special: bool = False,
    workers: int | None = None,
) -> ImpliedConvolution:
    """Decompose every head of ``maps`` (``[layer, head, query, key]``) on the shift basis of
    offsets ``-k..k`` (1D) or the ``(2r+1)^2`` window (2D grid)."""
    red = reduce_maps(maps, {"band", "energy"}, k=k, radius=radius, include_special=include_special, workers=workers)
    return convolution_from(red, maps.layer_ids, maps.head_ids)


def shift_matrix(n: int, delta: int) -> np.ndarray:
    """``S_delta`` ``[query, key]`` on ``n`` positions: 1 where ``key = query + delta`` (zero padded)."""
    return np.eye(n, k=int(delta), dtype=np.float32)


def grid_shift_matrix(grid: tuple[int, int], delta: tuple[int, int]) -> np.ndarray:
    """``S_(dr, dc) = S_dr (x) S_dc`` on a row-major ``rows x cols`` grid, ``[cell, cell]``."""
    rows, cols = grid
    return np.kron(shift_matrix(rows, delta[0]), shift_matrix(cols, delta[1]))
