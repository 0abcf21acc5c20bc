"""Slices of one layer's attention for long inputs: pooled overviews and per-row top-k keys.

A 4,096-token map of one head has 16.8 million cells; a view shows a pooled overview
(``pool_blocks``: each ``stride x stride`` block reduced to its maximum or its mean) and a
sparse summary of each row (``top_k``: the ``k`` keys a query attends to most, with their
weights). ``pooled_slice`` and ``top_k_slice`` read an ``AttentionMaps`` (eager or lazy) a band of
rows at a time, so a lazy run never materialises more than ``ROW_BAND_CELLS`` weights of one
layer at once besides the result.

Ranges are half-open ``[start, stop)`` position indices; ``parse_range`` reads the ``a:b``
notation of the REST API.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnscope.analysis.maps import AttentionMaps

POOLS = ("max", "mean")
ROW_BAND_CELLS = 1 << 23  # weights fetched per band of rows (32 MiB of float32)


def parse_range(text: str | None, size: int, name: str) -> tuple[int, int]:
    """``"a:b"`` (either end may be left out: ``":b"``, ``"a:"``, ``":"``) -> ``(a, b)`` with
    ``0 <= a < b <= size``; a ``ValueError`` naming the limit otherwise. ``None`` is the whole axis."""
    if text is None:
        return 0, size
    parts = text.split(":")
    if len(parts) != 2:
        raise ValueError(f"{name}={text!r} must be a range 'start:stop' (for example {name}=0:{min(size, 64)})")
    try:
        start = int(parts[0]) if parts[0].strip() else 0
        stop = int(parts[1]) if parts[1].strip() else size
    except ValueError:
        raise ValueError(f"{name}={text!r} must be a range of integers 'start:stop'") from None
    if start < 0 or stop > size:
        raise ValueError(
            f"{name}={text!r} is out of bounds: this run has {size} positions, use 0 <= start < stop <= {size}"
        )
    if start >= stop:
        raise ValueError(
            f"{name}={text!r} is empty or reversed: start must be less than stop (0 <= start < stop <= {size})"
        )
    return start, stop


def pool_blocks(x: np.ndarray, stride: int, mode: str = "max") -> np.ndarray:
    """Reduce each ``stride x stride`` block of the last two axes of ``x`` ``[..., rows, cols]`` to
    its maximum (``mode="max"``) or mean (``"mean"``): ``[..., ceil(rows / stride), ceil(cols /
    stride)]``. A block cut by the edge reduces over the cells it has (its mean divides by their
    count, not by ``stride**2``)."""
    if stride < 1:
        raise ValueError(f"stride must be at least 1; got {stride}")
    if mode not in POOLS:
        raise ValueError(f"pool={mode!r} is not one of {', '.join(POOLS)}")
    x = np.asarray(x, dtype=np.float32)
    if stride == 1:
        return x.copy()
    *lead, r, c = x.shape
    nr, nc = -(-r // stride), -(-c // stride)
    fill = -np.inf if mode == "max" else 0.0
    padded = np.full((*lead, nr * stride, nc * stride), fill, dtype=np.float32)
    padded[..., :r, :c] = x
    blocks = padded.reshape(*lead, nr, stride, nc, stride)
    if mode == "max":
        return blocks.max(axis=(-3, -1))
    sums = blocks.sum(axis=(-3, -1), dtype=np.float64)
    row_n = np.minimum(stride, r - np.arange(nr) * stride)
    col_n = np.minimum(stride, c - np.arange(nc) * stride)
    return (sums / (row_n[:, None] * col_n[None, :])).astype(np.float32)


def top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest entries of each row of ``x`` ``[..., cols]``: ``(indices [..., k] int64,
    weights [..., k] float32)``, largest first; ties go to the lower index. ``k <= cols``."""
    x = np.asarray(x, dtype=np.float32)
    n = x.shape[-1]
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be between 1 and the number of keys ({n})")
    # a stable sort of -x puts equal weights in index order
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return idx.astype(np.int64), np.take_along_axis(x, idx, axis=-1)


def _row_bands(maps: AttentionMaps, n_heads: int, rows: tuple[int, int], multiple: int = 1):
    """``(start, stop)`` bands of ``rows``, each a multiple of ``multiple`` rows (but the last)
    and about ``ROW_BAND_CELLS`` weights of ``n_heads`` heads over every key."""
    step = max(1, ROW_BAND_CELLS // max(1, n_heads * maps.n_tokens))
    step = max(multiple, step - step % multiple)
    for a in range(rows[0], rows[1], step):
        yield a, min(rows[1], a + step)


def pooled_slice(
    maps: AttentionMaps,
    layer: int,
    heads: Sequence[int] | None,
    rows: tuple[int, int],
    cols: tuple[int, int],
    stride: int = 1,
    mode: str = "max",
) -> np.ndarray:
    """``[len(heads), ceil(R / stride), ceil(C / stride)]`` of ``layer`` over ``rows`` x ``cols``
    (``R``, ``C`` their lengths), pooled as ``pool_blocks`` (``stride=1``: the weights themselves).
    Each weight keeps its normalisation over every key of its row. ``heads=None``: every head."""
    return pooled_with_keys(maps, layer, heads, rows, cols, stride, mode)[0]


def pooled_with_keys(
    maps: AttentionMaps,
    layer: int,
    heads: Sequence[int] | None,
    rows: tuple[int, int],
    cols: tuple[int, int],
    stride: int = 1,
    mode: str = "max",
    keys: Sequence[int] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """``pooled_slice``'s window and, in the same read, each block of ``stride`` rows' mean weight on
    each key of ``keys`` (absolute positions): ``(pooled [len(heads), ceil(R / stride), ceil(C /
    stride)], key_means [len(heads), ceil(R / stride), len(keys)])``. A lazy source that pools as it
    computes (``QKMapSource.pooled``) never builds a band of the window."""
    if mode not in POOLS:
        raise ValueError(f"pool={mode!r} is not one of {', '.join(POOLS)}")
    hs = list(range(maps.n_heads)) if heads is None else list(heads)
    keys = [int(k) for k in keys]
    fused = getattr(maps.source, "pooled", None) if maps.is_lazy else None
    if fused is not None:
        layer_id = maps._check_index("layer", layer, maps.n_layers)
        return fused(layer_id, [maps._check_index("head", h, maps.n_heads) for h in hs], rows, cols, stride, mode, keys)
    out, key_means = [], []
    for a, b in _row_bands(maps, len(hs), rows, stride):
        block = maps.block(layer, hs, slice(a, b), slice(*cols))  # [head, band, C]
        out.append(pool_blocks(block, stride, mode))
        on_keys = np.zeros((len(hs), -(-(b - a) // stride) * stride, len(keys)), np.float32)  # [head, band, key]
        for j, k in enumerate(keys):
            on_keys[:, : b - a, j] = maps.block(layer, hs, slice(a, b), slice(k, k + 1))[..., 0]
        row_n = np.minimum(stride, (b - a) - np.arange(on_keys.shape[1] // stride) * stride)
        key_means.append(on_keys.reshape(len(hs), len(row_n), stride, len(keys)).sum(axis=2) / row_n[None, :, None])
    return np.concatenate(out, axis=1), np.concatenate(key_means, axis=1)


def top_k_slice(
    maps: AttentionMaps,
    layer: int,
    heads: Sequence[int] | None,
    rows: tuple[int, int],
    cols: tuple[int, int],
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``rows`` the ``k`` keys of ``cols`` with the largest weight: ``(indices
    [len(heads), R, k]`` absolute key positions int64, ``weights [len(heads), R, k]`` float32)."""
    hs = list(range(maps.n_heads)) if heads is None else list(heads)
    if not 1 <= k <= cols[1] - cols[0]:
        raise ValueError(f"k={k} must be between 1 and the number of keys in cols ({cols[1] - cols[0]})")
    fused = getattr(maps.source, "top_k", None) if maps.is_lazy else None
    if fused is not None:  # a lazy source that selects as it computes (QKMapSource.top_k)
        layer_id = maps._check_index("layer", layer, maps.n_layers)
        return fused(layer_id, [maps._check_index("head", h, maps.n_heads) for h in hs], rows, cols, k)
    idx_parts, w_parts = [], []
    for a, b in _row_bands(maps, len(hs), rows):
        idx, w = top_k(maps.block(layer, hs, slice(a, b), slice(*cols)), k)
        idx_parts.append(idx + cols[0])
        w_parts.append(w)
    return np.concatenate(idx_parts, axis=1), np.concatenate(w_parts, axis=1)
