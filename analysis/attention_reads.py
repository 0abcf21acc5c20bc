"""What one read of a run's attention returns: every layer's row of one query position, a pooled
window of one layer (or head), or each row's top-k keys, checked against a size limit.

The REST routes (``server/routes/attention.py``) call these and only encode the typed result; the
choices live here: which keys a causal query sees, how a range string becomes positions, what a
window costs. Ranges are half-open ``[start, stop)`` (``parse_range``); sizes are counted as float32
cells (4 bytes each) before anything is read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.analysis.indices import check_index
from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.slices import parse_range, pooled_slice, top_k_slice


class SliceRequestError(ValueError):
    """A window that cannot be read as asked (a bad range, top-k with a stride, k over the keys)."""


class SliceTooLargeError(ValueError):
    """A window over the byte limit; the message says how to narrow it."""


@dataclass(frozen=True)
class QueryRows:
    """Every layer's and head's row of one query: ``weights`` ``[layer, head, key]`` over the keys it
    sees (``query + 1`` of a causal run, all of them otherwise), ``tokens`` those keys' labels."""

    query: int
    token: str
    tokens: list[str]
    weights: np.ndarray


@dataclass(frozen=True)
class PooledWindow:
    """``weights`` ``[head, ceil(R / stride), ceil(C / stride)]``, or ``[rows, cols]`` when one ``head``
    was asked for, of ``layer`` over ``rows`` x ``cols`` (each weight normalised over its whole row)."""

    layer: int
    head: int | None
    rows: tuple[int, int]
    cols: tuple[int, int]
    stride: int
    pool: str
    weights: np.ndarray


@dataclass(frozen=True)
class TopKWindow:
    """Per row of ``rows`` the ``k`` keys of ``cols`` with the largest weight: ``indices`` (absolute key
    positions) and ``weights``, ``[head, R, k]``, or ``[R, k]`` when one ``head`` was asked for."""

    layer: int
    head: int | None
    rows: tuple[int, int]
    cols: tuple[int, int]
    k: int
    indices: np.ndarray
    weights: np.ndarray


def query_rows(maps: AttentionMaps, query: int) -> QueryRows:
    """Row ``query`` of every layer and head (``[layer, head, key]``), read a layer at a time (a lazy
    run never builds the stack); an ``OutOfRangeError`` names the run's positions."""
    check_index("query", query, maps.n_tokens, "this run", "positions")
    keys = query + 1 if maps.causal else maps.n_tokens
    rows, cols = slice(query, query + 1), slice(0, keys)
    weights = np.stack([maps.block(li, rows=rows, cols=cols)[:, 0] for li in range(maps.n_layers)])
    return QueryRows(query=query, token=maps.tokens[query], tokens=list(maps.tokens[:keys]), weights=weights)


def _window(maps: AttentionMaps, layer: int, head: int | None, rows: str | None, cols: str | None):
    check_index("layer", layer, maps.n_layers)
    if head is not None:
        check_index("head", head, maps.n_heads)
    try:
        return parse_range(rows, maps.n_tokens, "rows"), parse_range(cols, maps.n_tokens, "cols")
    except ValueError as exc:
        raise SliceRequestError(str(exc)) from None


def _check_bytes(cells: int, what: str, max_bytes: int) -> None:
    if 4 * cells > max_bytes:
        raise SliceTooLargeError(
            f"{what} has {cells} cells ({4 * cells} bytes as float32), over the limit of {max_bytes} bytes "
            f"({max_bytes // 4} cells) per slice: ask for one head, a narrower rows/cols window, "
            "a larger stride, or format=topk"
        )


def read_window(
    maps: AttentionMaps,
    layer: int,
    head: int | None,
    rows: str | None,
    cols: str | None,
    *,
    stride: int = 1,
    pool: str = "max",
    k: int | None = None,
    max_bytes: int,
) -> PooledWindow | TopKWindow:
    """One window of ``layer`` (all heads, or ``head``): pooled by ``stride`` (``k`` None), or each
    row's top ``k`` keys (``stride`` must be 1). ``rows``/``cols`` are ``"start:stop"`` strings (None:
    the whole axis). Refused before anything is read: an index out of range (``OutOfRangeError``), a
    bad window (``SliceRequestError``), more than ``max_bytes`` as float32 (``SliceTooLargeError``)."""
    (r0, r1), (c0, c1) = _window(maps, layer, head, rows, cols)
    heads = None if head is None else [head]
    n_heads = maps.n_heads if head is None else 1
    if k is not None:
        if stride != 1:
            raise SliceRequestError(f"format=topk reads full-resolution rows: send stride=1 (got stride={stride})")
        if k > c1 - c0:
            raise SliceRequestError(f"k={k} is more than the {c1 - c0} keys in cols={c0}:{c1}: use 1 <= k <= {c1 - c0}")
        _check_bytes(2 * n_heads * (r1 - r0) * k, "this top-k slice (indices and weights)", max_bytes)
        idx, w = top_k_slice(maps, layer, heads, (r0, r1), (c0, c1), k)
        if head is not None:
            idx, w = idx[0], w[0]
        return TopKWindow(layer, head, (r0, r1), (c0, c1), k, idx, w)
    cells = n_heads * -(-(r1 - r0) // stride) * -(-(c1 - c0) // stride)
    _check_bytes(cells, "this slice", max_bytes)
    weights = pooled_slice(maps, layer, heads, (r0, r1), (c0, c1), stride, pool)
    if head is not None:
        weights = weights[0]
    return PooledWindow(layer, head, (r0, r1), (c0, c1), stride, pool, weights)
