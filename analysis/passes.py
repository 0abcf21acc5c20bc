"""One fused pass over ``[layer, head, query, key]`` maps that every structural analysis reads.

Reading a ``[6, 12, 512, 512]`` float32 tensor once already costs a full memory sweep; running the
shift scan, entropy, distance and rollout as separate numpy expressions sweeps it many times and
allocates temporaries the size of the maps. ``reduce_maps`` instead walks each layer in blocks of
query rows (all heads of a block together, about ``BLOCK_BYTES``, so a block stays in cache) and
computes, while the block is hot, every small reduction the analyses need. Layers run in a thread
pool (numpy releases the GIL inside its loops). Temporaries are one block-sized buffer per worker.

Parts (ask only for what you need):

- ``band``: ``band_sum[layer, head, offset]`` = sum of ``A[q, q + offset]`` over the rows where the
  offset exists (``OffsetIndex``), float64.
- ``entropy``: ``entropy[layer, head, query]`` (nats, ``-sum p log p``) and ``top1[...]`` (row max).
- ``special``: ``special_cols[layer, head, special, query]`` = attention of each query on each
  special key (query last, so sums over queries run on contiguous memory).
- ``energy``: ``energy[layer, head]`` = sum of ``A**2`` over the scan's rows x cols block.
- ``distance``: ``distance_sum[layer, head]`` = sum of ``A * d`` over non-special pairs
  (``offsets.distance_matrix``).
- ``mean``: ``head_mean[layer, query, key]`` = the head average of each layer.
- ``first``: ``first_col[layer, head, query]`` = attention of each query on position 0 (the
  attention sink of causal models).

Lazy maps (``AttentionMaps.lazy``) are read a band of rows at a time (``LAZY_BAND_BYTES`` of one
layer, computed by the map source), so the pass never holds a whole layer, let alone the stack;
eager maps are read in place.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.offsets import OffsetIndex, distance_matrix, offset_index

log = logging.getLogger(__name__)

PARTS = frozenset({"band", "entropy", "special", "energy", "distance", "mean", "first"})
BLOCK_BYTES = 3 << 19  # 1.5 MiB of weights per block (all heads x some query rows): stays in L2/L3
LAZY_BAND_BYTES = 1 << 25  # lazy maps: 32 MiB of one layer's rows computed per request to the source
SMALL_WORK = 1 << 20  # below this many weights a thread pool costs more than it saves
LN2 = float(np.log(2.0))
TINY = np.float32(1e-30)  # p * log(p + TINY) differs from p * log p by < 1e-7 relative for p > 1e-23


@dataclass(frozen=True)
class Reductions:
    """Small per-head results of one pass; a part not requested is ``None``. See module docstring."""

    index: OffsetIndex
    band_sum: np.ndarray | None = None  # [layer, head, offset] float64
    entropy: np.ndarray | None = None  # [layer, head, query] float32, nats
    top1: np.ndarray | None = None  # [layer, head, query] float32
    special_cols: np.ndarray | None = None  # [layer, head, special, query] float32
    energy: np.ndarray | None = None  # [layer, head] float64
    distance_sum: np.ndarray | None = None  # [layer, head] float64
    head_mean: np.ndarray | None = None  # [layer, query, key] float32
    first_col: np.ndarray | None = None  # [layer, head, query] float32


def _workers(requested: int | None, n_layers: int, size: int) -> int:
    if requested is not None:
        return max(1, min(int(requested), n_layers))
    if size < SMALL_WORK:
        return 1
    return max(1, min(os.cpu_count() or 1, n_layers))


def _rowdot(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``sum(a * b, axis=-1)`` for ``[..., row, key]`` blocks, as batched BLAS dot products
    (``out``: an array, or a view, of shape ``a.shape[:-1]``)."""
    if out is None:
        return np.matmul(a[..., None, :], b[..., :, None])[..., 0, 0]
    np.matmul(a[..., None, :], b[..., :, None], out=out[..., None, None])
    return out


def _fix_zero_rows(v: np.ndarray, ent: np.ndarray) -> None:
    """Rows of ``v`` ``[..., key]`` holding exact zeros gave ``ent = 0 * log2(0) = nan``; redo
    them in place with ``0 log 0 = 0`` (``ent`` is ``v.shape[:-1]``, a view or an array)."""
    bad = np.isnan(ent)
    if bad.any():
        rows = v[bad]  # [n_bad, key] copy of only the affected rows
        logs = np.log2(rows, out=np.zeros_like(rows), where=rows > 0)
        ent[bad] = np.einsum("ij,ij->i", rows, logs)


def row_entropy(p: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
    """Entropy in nats of each row of ``p`` ``[..., key]`` (float32, ``0 log 0 = 0``); ``[...]`` out.
    ``scratch``: an optional float32 buffer of ``p``'s size for the logarithms."""
    p = np.ascontiguousarray(p, dtype=np.float32)
    flat = p.reshape(-1, p.shape[-1])
    logs = None if scratch is None else scratch.reshape(flat.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = _rowdot(flat, np.log2(flat, out=logs))
        _fix_zero_rows(flat, ent)
    return np.maximum(ent * np.float32(-LN2), 0.0).reshape(p.shape[:-1])


def reduce_maps(
    maps: AttentionMaps,
    parts=PARTS,
    *,
    index: OffsetIndex | None = None,
    k: int = 8,
    radius: int = 3,
    include_special: bool = False,
    workers: int | None = None,
    check=None,
    progress=None,
) -> Reductions:
    """Compute the requested ``parts`` in one pass over ``maps.weights`` ``[layer, head, query, key]``.

    ``index`` (or ``k``/``radius``/``include_special`` to build it) fixes the offsets of ``band``
    and the rows x cols block of ``energy``. ``workers`` threads (default: one per core, at most one
    per layer; one thread for small maps). ``check()``, when given, is called before each band of rows
    (from the worker threads): it raises to stop the pass (a request's cancellation). ``progress(done,
    total)``, when given, is called after each band of rows with the bands done so far out of the
    pass's ``total`` (``layer x bands per layer``; from the worker threads, under a lock).
    """
    parts = frozenset(parts)
    unknown = parts - PARTS
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}; choose from {sorted(PARTS)}")
    if index is None:
        index = offset_index(maps, k=k, radius=radius, include_special=include_special)
    lazy = maps.is_lazy
    w = None if lazy else np.ascontiguousarray(maps.weights, dtype=np.float32)
    n_layer, n_head, n, _ = maps.shape
    block = int(max(1, min(n, BLOCK_BYTES // (4 * n_head * n))))
    band_rows = n if not lazy else max(block, (LAZY_BAND_BYTES // (4 * n_head * n)) // block * block)
    special = np.asarray(maps.special, dtype=np.intp)
    want = parts.__contains__
    out = {
        "band_sum": None,
        "entropy": np.empty((n_layer, n_head, n), np.float32) if want("entropy") else None,
        "top1": np.empty((n_layer, n_head, n), np.float32) if want("entropy") else None,
        "special_cols": (
            np.empty((n_layer, n_head, special.size, n), np.float32) if want("special") or want("energy") else None
        ),
        "energy": None,
        "distance_sum": np.zeros((n_layer, n_head)) if want("distance") else None,
        "head_mean": np.empty((n_layer, n, n), np.float32) if want("mean") else None,
        "first_col": np.empty((n_layer, n_head, n), np.float32) if want("first") else None,
    }
    rowsq = np.empty((n_layer, n_head, n), np.float32) if want("energy") else None
    top1_bits = out["top1"].view(np.int32) if want("entropy") else None
    dist = distance_matrix(maps).reshape(n, n) if want("distance") else None
    head_weights = np.full(n_head, 1.0 / n_head, dtype=np.float32)
    if want("band"):
        plan = index.block_plan(block, n_head)
        band_buf = np.empty((n_layer, plan.gather.size), np.float32)

    total_bands = n_layer * -(-n // band_rows)
    bands_done = [0]
    count_lock = threading.Lock()

    def layer_task(li: int) -> None:
        buf = np.empty((n_head, block, n), np.float32)
        with maps.reading_layer(li):  # a source that rebuilds a layer's inputs does it once, not per band
            for b0 in range(0, n, band_rows):  # eager: one band, the layer itself (a view)
                if check is not None:
                    check()
                b1 = min(n, b0 + band_rows)
                band = w[li] if not lazy else np.ascontiguousarray(maps.block(li, rows=slice(b0, b1)))
                band_task(li, band, b0, b1, buf)
                if progress is not None:
                    with count_lock:
                        bands_done[0] += 1
                        progress(bands_done[0], total_bands)

    def band_task(li: int, band: np.ndarray, b0: int, b1: int, buf: np.ndarray) -> None:
        """Rows ``b0:b1`` of layer ``li``: ``band [head, b1 - b0, key]``."""
        band_flat = band.reshape(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            for bi in range(b0 // block, -(-b1 // block)):  # few numpy calls per block, outputs in place
                r0, r1 = bi * block, min(n, (bi + 1) * block)
                v = band[:, r0 - b0 : r1 - b0]  # [head, rows, key] view
                v2 = v.reshape(n_head, -1)
                if want("entropy"):
                    if maps.causal:  # masked keys are exact zeros: log2(p + tiny), 0 * finite = 0
                        lg = np.log2(np.add(v, TINY, out=buf[:, : r1 - r0]), out=buf[:, : r1 - r0])
                    else:  # zeros are rare; the few rows they poison are redone below
                        lg = np.log2(v, out=buf[:, : r1 - r0])
                    _rowdot(v, lg, out=out["entropy"][li, :, r0:r1])
                    # non-negative floats order like their int32 bit patterns; int max is faster
                    np.maximum.reduce(v.view(np.int32), axis=-1, out=top1_bits[li, :, r0:r1])
                if want("band"):  # a 1D take over the band is faster than 2D fancy indexing
                    lo, hi = plan.bounds[bi], plan.bounds[bi + 1]
                    cells = plan.gather[lo:hi]
                    if b1 - b0 != n:  # indices into [head, n, n] -> into this band [head, b1 - b0, n]
                        h = cells // (n * n)
                        cells = cells - h * (n * n) - b0 * n + h * ((b1 - b0) * n)
                    np.take(band_flat, cells, out=band_buf[li, lo:hi])
                if rowsq is not None:
                    _rowdot(v, v, out=rowsq[li, :, r0:r1])
                if dist is not None:
                    out["distance_sum"][li] += v2 @ dist[r0:r1].reshape(-1)
                if want("mean"):  # (1/H, ..., 1/H) @ [head, rows * key]: one BLAS gemv
                    np.matmul(head_weights, v2, out=out["head_mean"][li, r0:r1].reshape(-1))
            if want("entropy"):  # rows holding exact zeros gave 0 * log2(0) = nan: redo them
                _fix_zero_rows(band, out["entropy"][li, :, b0:b1])
        if out["special_cols"] is not None:  # a few columns: one gather per band
            out["special_cols"][li][:, :, b0:b1] = band[:, :, special].transpose(0, 2, 1)
        if out["first_col"] is not None:
            out["first_col"][li, :, b0:b1] = band[:, :, 0]

    n_workers = _workers(workers, n_layer, n_layer * n_head * n * n)
    if n_workers == 1:
        for li in range(n_layer):
            layer_task(li)
    else:
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            for fut in [pool.submit(layer_task, li) for li in range(n_layer)]:
                fut.result()
    if out["entropy"] is not None:
        out["entropy"] *= np.float32(-LN2)  # -sum p log2 p, in nats
        np.maximum(out["entropy"], 0.0, out=out["entropy"])  # -0.0 and rounding below zero
    if want("band"):  # no BLAS here: a threaded GEMM stalls when the other cores are busy
        band_sum = np.zeros((n_layer, n_head * index.n_offsets))
        if plan.group_start.size:
            groups = np.add.reduceat(band_buf, plan.group_start, axis=-1, dtype=np.float64)
            for li in range(n_layer):
                band_sum[li] = np.bincount(plan.target, groups[li], minlength=band_sum.shape[1])
        band_sum = band_sum.reshape(n_layer, n_head, index.n_offsets)
        out["band_sum"] = band_sum
    if rowsq is not None:  # sums over all rows minus the few rows outside the block
        outside_rows = np.setdiff1d(np.arange(n), index.rows)
        energy = rowsq.sum(axis=-1, dtype=np.float64) - rowsq[..., outside_rows].sum(-1, dtype=np.float64)
        outside = np.isin(special, index.cols, invert=True)  # special keys left out of the block
        if outside.any():
            sq = out["special_cols"][:, :, outside].astype(np.float64) ** 2  # [layer, head, s, query]
            energy -= sq.sum(axis=(-2, -1)) - sq[..., outside_rows].sum(axis=(-2, -1))
        out["energy"] = energy
    if not want("special"):
        out["special_cols"] = None
    return Reductions(index=index, **out)
