"""Relative offsets between query and key positions: the index tables the shift scan reads.

An offset is ``key - query`` (previous token = ``-1``). In 1D it is a position difference; on an
image grid it is ``(drow, dcol)`` between grid cells, with the grid laid out row-major over the
non-special positions (``AttentionMaps.grid_positions``).

On causal maps (a decoder's attention) only offsets ``<= 0`` exist, and the first row has a single
key (itself): its mass is forced, not chosen, so it is left out of the rows a scan averages over
(its column stays: it is the previous token of row 1).

``offset_index`` lists, for every offset, the ``(query, key)`` cells of a ``[query, key]`` map that
carry that offset, as flat indices ``query * n + key`` grouped by offset. Gathering those cells from
a head's flattened map and summing per group gives the diagonal masses of the shift scan, without
materialising the shift matrices; ``OffsetIndex.block_plan`` re-orders those cells for the
block-wise pass of ``attnscope.analysis.passes``. ``distance_matrix`` gives ``|key - query|`` (tokens) or the
Euclidean grid distance for every pair of non-special positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class OffsetIndex:
    """Which cells of an ``[n, n]`` map carry each offset.

    Attributes:
        n: number of positions (query == key).
        offsets: ``[offset]`` ints (1D) or ``[offset, 2]`` ``(drow, dcol)`` (2D), in scan order.
        kernel_shape: ``(2k+1,)`` in 1D, ``(2r+1, 2r+1)`` in 2D (``offsets`` reshaped to a patch).
        flat: ``[pair]`` flat cell indices ``query * n + key``, grouped by offset.
        starts: ``[offset]`` start of each offset's group in ``flat`` (groups may be empty).
        count: ``[offset]`` number of query rows where the offset exists.
        rows: ``[row]`` query positions the scan averages over (non-special unless included; on
            causal maps without the forced first row).
        cols: ``[col]`` key positions the scan may land on (non-special unless included).
        query: ``[pair]`` query position of each pair in ``flat`` (``flat // n``).
        offset_id: ``[pair]`` index into ``offsets`` of each pair in ``flat``.
    """

    n: int
    offsets: np.ndarray
    kernel_shape: tuple[int, ...]
    flat: np.ndarray
    starts: np.ndarray
    count: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    _plans: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def query(self) -> np.ndarray:
        return self.flat // self.n

    @property
    def offset_id(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_offsets), self.count)

    @property
    def is_2d(self) -> bool:
        return self.offsets.ndim == 2

    @property
    def n_offsets(self) -> int:
        return int(self.offsets.shape[0])

    def block_plan(self, block: int, n_head: int) -> BlockPlan:
        """The cells re-ordered for a pass over blocks of ``block`` query rows (cached)."""
        plan = self._plans.get((block, n_head))
        if plan is None:
            plan = self._plans[(block, n_head)] = BlockPlan.build(self, block, n_head)
        return plan

    def position(self, delta) -> int:
        """Index of an offset (an int in 1D, a ``(drow, dcol)`` pair in 2D) in ``offsets``."""
        target = np.atleast_1d(np.asarray(delta))
        hits = np.flatnonzero(np.all(self.offsets.reshape(self.n_offsets, -1) == target, axis=1))
        if hits.size == 0:
            raise KeyError(f"offset {delta!r} is outside this scan's window")
        return int(hits[0])

    def label(self, i: int) -> str:
        """Human-readable offset: ``-1`` or ``(+0,-1)``."""
        if self.is_2d:
            dr, dc = (int(v) for v in self.offsets[i])
            return f"({dr:+d},{dc:+d})"
        return f"{int(self.offsets[i]):+d}"


@dataclass(frozen=True)
class BlockPlan:
    """Where a pass over blocks of ``block`` query rows finds each offset's cells.

    Pairs are sorted by (block, offset). For ``n_head`` heads of one layer (``[head, n, n]``
    flattened), ``gather`` lists the cells block by block, head by head inside a block, so each
    block's cells are the contiguous slice ``bounds[b]:bounds[b+1]`` of the gathered vector.
    ``np.add.reduceat(gathered, group_start)`` sums each (block, head, offset) group and
    ``np.bincount(target, sums)`` adds the groups into ``[head * offset]`` band sums.
    """

    block: int
    gather: np.ndarray  # [head * pair] flat index into one layer's [head, n, n]
    bounds: np.ndarray  # [block + 1] slice bounds of each block in ``gather``
    group_start: np.ndarray  # [group] start of each (block, head, offset) group in ``gather``
    target: np.ndarray  # [group] head * n_offsets + offset of each group

    @classmethod
    def build(cls, index: OffsetIndex, block: int, n_head: int) -> BlockPlan:
        n, n_off = index.n, index.n_offsets
        q = index.query
        bid = q // block
        order = np.lexsort((index.offset_id, bid))
        q, bid, off = q[order], bid[order], index.offset_id[order]
        cell = index.flat[order]  # q * n + key within one head
        cuts = np.searchsorted(bid, np.arange(0, (n + block - 1) // block + 1))
        gather, starts, target = [], [], []
        pos = 0
        for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
            seg_off = off[lo:hi]
            new = np.flatnonzero(np.r_[True, seg_off[1:] != seg_off[:-1]]) if hi > lo else np.empty(0, int)
            for h in range(n_head):
                gather.append(h * n * n + cell[lo:hi])
                starts.append(pos + new)
                target.append(h * n_off + seg_off[new])
                pos += hi - lo
        cat = lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.empty(0, dt)  # noqa: E731
        return cls(block, cat(gather, np.intp), cuts * n_head, cat(starts, np.intp), cat(target, np.intp))


def _freeze(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.flags.writeable = False


def _group(pairs: list[tuple[np.ndarray, np.ndarray]], n: int):
    sizes = np.array([q.size for q, _ in pairs], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    flat = np.concatenate([q * n + k for q, k in pairs]).astype(np.intp) if pairs else np.empty(0, np.intp)
    return flat, starts, sizes


@lru_cache(maxsize=64)
def offset_index_1d(
    n: int, special: tuple[int, ...], k: int, include_special: bool, causal: bool = False
) -> OffsetIndex:
    """Offsets ``-k..k`` (``-k..0`` when ``causal``) on a sequence of ``n`` positions; special
    positions are left out of both rows and columns unless ``include_special``; on causal maps the
    first row (one key, its mass forced) is left out of the rows."""
    if k < 0:
        raise ValueError(f"the scan half-width k must be >= 0; got {k}")
    valid = np.ones(n, dtype=bool)
    if not include_special:
        valid[list(special)] = False
    row_ok = valid.copy()
    if causal:
        row_ok[0] = False
    offsets = np.arange(-k, 1 if causal else k + 1, dtype=np.int64)
    pairs = []
    for d in offsets:
        q = np.arange(max(0, -d), min(n, n - d), dtype=np.int64)
        q = q[row_ok[q] & valid[q + d]]
        pairs.append((q, q + d))
    flat, starts, count = _group(pairs, n)
    rows, cols = np.flatnonzero(row_ok), np.flatnonzero(valid)
    out = OffsetIndex(n, offsets, (offsets.size,), flat, starts, count, rows, cols)
    _freeze(offsets, flat, starts, count, rows, cols)
    return out


@lru_cache(maxsize=64)
def offset_index_2d(n: int, special: tuple[int, ...], grid: tuple[int, int], radius: int) -> OffsetIndex:
    """Offsets ``(drow, dcol)`` with ``|drow|, |dcol| <= radius`` between grid cells. Special
    positions are not on the grid, so they never take part in a 2D scan."""
    if radius < 0:
        raise ValueError(f"the scan radius must be >= 0; got {radius}")
    n_rows, n_cols = grid
    gp = np.array([i for i in range(n) if i not in set(special)], dtype=np.int64)
    cell_r, cell_c = np.divmod(np.arange(n_rows * n_cols), n_cols)
    span = np.arange(-radius, radius + 1, dtype=np.int64)
    offsets = np.stack(np.meshgrid(span, span, indexing="ij"), axis=-1).reshape(-1, 2)
    pairs = []
    for dr, dc in offsets:
        ok = (cell_r + dr >= 0) & (cell_r + dr < n_rows) & (cell_c + dc >= 0) & (cell_c + dc < n_cols)
        src = np.flatnonzero(ok)
        pairs.append((gp[src], gp[src + dr * n_cols + dc]))
    flat, starts, count = _group(pairs, n)
    side = 2 * radius + 1
    out = OffsetIndex(n, offsets, (side, side), flat, starts, count, gp, gp)
    _freeze(offsets, flat, starts, count, gp)
    return out


def offset_index(maps, k: int = 8, radius: int = 3, include_special: bool = False) -> OffsetIndex:
    """The offset table for ``maps``: 2D (``radius``) when ``maps.grid`` is set, else 1D (``k``;
    offsets ``<= 0`` only on causal maps)."""
    if maps.grid is not None:
        return offset_index_2d(maps.n_tokens, maps.special, maps.grid, int(radius))
    return offset_index_1d(maps.n_tokens, maps.special, int(k), bool(include_special), bool(maps.causal))


@lru_cache(maxsize=16)
def _distance(n: int, special: tuple[int, ...], grid: tuple[int, int] | None) -> np.ndarray:
    d = np.zeros((n, n), dtype=np.float32)
    pos = np.array([i for i in range(n) if i not in set(special)], dtype=np.int64)
    if grid is None:
        coords = pos[:, None].astype(np.float64)
    else:
        coords = np.stack(np.divmod(np.arange(pos.size), grid[1]), axis=-1).astype(np.float64)
    diff = coords[:, None, :] - coords[None, :, :]
    d[np.ix_(pos, pos)] = np.sqrt((diff**2).sum(-1))
    d.flags.writeable = False
    return d


def distance_matrix(maps) -> np.ndarray:
    """``[query, key]`` float32: ``|key - query|`` in tokens (1D) or the Euclidean distance in grid
    cells (2D) between non-special positions; rows and columns of special positions are 0."""
    return _distance(maps.n_tokens, maps.special, maps.grid)
