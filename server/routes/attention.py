"""A run's attention, read without the whole stack: one layer ``[head, query, key]`` or one head ``[query,
key]`` over a window of rows and columns, pooled by a stride or as each row's top-k keys, and every layer's
row of one query position; JSON or the compact binary encoding (``analysis/codec.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from fastapi import APIRouter, HTTPException, Path, Query, Request, Response, status

from attnscope.analysis.codec import MEDIA_TYPE, pack, pack_top_k
from attnscope.analysis.indices import check_index
from attnscope.server.deps import RunDep
from attnscope.server.routes.runs import ERRORS, MAX_HEAD, MAX_LAYER
from attnscope.server.schemas import (
    MAX_SLICE_BYTES,
    MAX_STRIDE,
    MAX_TOP_K,
    RANGE_PATTERN,
    AttentionRowsPublic,
    AttentionSlicePublic,
    AttentionTopKPublic,
    ErrorBody,
)

router = APIRouter(prefix="/runs", tags=["runs"])


@router.get(
    "/{run_id}/rows/{query}",
    response_model=AttentionRowsPublic,
    responses={
        **ERRORS,
        200: {"content": {MEDIA_TYPE: {}}, "description": "JSON, or with format=float16|uint8 a compact binary blob"},
    },
    summary="Every layer's and head's attention row of one query position [layer, head, key]: what that position "
    "looked at (for a generated token, the row of the position before it, listed in the run's generation steps)",
)
def read_attention_rows(
    run: RunDep,
    request: Request,
    query: Annotated[int, Path(ge=0, le=2**31 - 1, description="zero-based query position")],
    format: Annotated[
        Literal["json", "float16", "uint8"] | None,
        Query(description="json (default), or a compact binary encoding; overrides Accept"),
    ] = None,
):
    maps = run.capture.maps
    check_index("query", query, maps.n_tokens, "this run", "positions")
    keys = query + 1 if maps.causal else maps.n_tokens
    rows, cols = slice(query, query + 1), slice(0, keys)  # one row of each layer [layer, head, key]: not the stack
    weights = np.stack(
        [maps.block(li, rows=rows, cols=cols)[:, 0] for li in range(maps.n_layers)]
    )  # [layer, head, key]
    tokens = list(maps.tokens[:keys])
    if format is None:
        format = "float16" if MEDIA_TYPE in request.headers.get("accept", "") else "json"
    if format != "json":
        blob = pack(weights, format, run_id=run.id, query=query, tokens=tokens)
        return Response(blob, media_type=MEDIA_TYPE)
    return AttentionRowsPublic(
        run_id=run.id,
        query=query,
        token=maps.tokens[query],
        shape=list(weights.shape),
        tokens=tokens,
        weights=weights.tolist(),
    )


ATTENTION_FORMATS = ("json", "float16", "uint8", "topk")


def _slice_ranges(maps, rows: str | None, cols: str | None) -> tuple[tuple[int, int], tuple[int, int]]:
    from attnscope.analysis.slices import parse_range

    try:
        return parse_range(rows, maps.n_tokens, "rows"), parse_range(cols, maps.n_tokens, "cols")
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None


def _check_slice_bytes(cells: int, what: str) -> None:
    if 4 * cells > MAX_SLICE_BYTES:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            f"{what} has {cells} cells ({4 * cells} bytes as float32), over the limit of {MAX_SLICE_BYTES} bytes "
            f"({MAX_SLICE_BYTES // 4} cells) per slice: ask for one head, a narrower rows/cols window, "
            "a larger stride, or format=topk",
        )


@router.get(
    "/{run_id}/attention",
    response_model=AttentionSlicePublic | AttentionTopKPublic,
    responses={
        **ERRORS,
        413: {
            "model": ErrorBody,
            "description": f"the slice would hold more than {MAX_SLICE_BYTES} bytes as float32 "
            f"({MAX_SLICE_BYTES // 4} cells): narrow rows/cols, pick one head, raise stride or use format=topk",
        },
        200: {
            "content": {MEDIA_TYPE: {}},
            "description": "JSON, or with format=float16|uint8 (or Accept: "
            f"{MEDIA_TYPE}) a compact binary blob: b'ATNS' + uint32 header length + JSON header + payload; "
            "format=topk answers JSON indices and weights, or with that Accept header a binary top-k blob "
            "(header kind 'topk': uint16/uint32 indices, then float16 weights)",
        },
    },
    summary="One layer [head, query, key] or one head [query, key] of a run's attention: a window of rows and "
    "columns, pooled by a stride for overviews, or each row's top-k keys",
)
def read_attention(
    run: RunDep,
    request: Request,
    layer: Annotated[int, Query(ge=0, le=MAX_LAYER, description="zero-based layer (each model has its own count)")],
    head: Annotated[
        int | None, Query(ge=0, le=MAX_HEAD, description="zero-based head; omit for the whole layer")
    ] = None,
    format: Annotated[
        Literal["json", "float16", "uint8", "topk"] | None,
        Query(
            description="json (default), a compact binary encoding (float16, uint8), or topk: per row the k keys "
            "with the largest weight (sparse); overrides Accept for the dense formats"
        ),
    ] = None,
    rows: Annotated[
        str | None,
        Query(
            pattern=RANGE_PATTERN,
            max_length=13,
            description="query positions 'start:stop' (half-open, 0 <= start < stop <= tokens; an end left out "
            "is the axis' end), default every row",
        ),
    ] = None,
    cols: Annotated[
        str | None,
        Query(pattern=RANGE_PATTERN, max_length=13, description="key positions 'start:stop', as rows"),
    ] = None,
    stride: Annotated[
        int,
        Query(
            ge=1,
            le=MAX_STRIDE,
            description="pool each stride x stride block into one cell (overviews of long runs); 1: full resolution",
        ),
    ] = 1,
    pool: Annotated[
        Literal["max", "mean"], Query(description="how a block is pooled: its maximum (default) or its mean")
    ] = "max",
    k: Annotated[
        int,
        Query(ge=1, le=MAX_TOP_K, description="format=topk: keys per row (at most the keys in cols)"),
    ] = 8,
):
    from attnscope.analysis.slices import pooled_slice, top_k_slice

    maps = run.capture.maps
    check_index("layer", layer, maps.n_layers)
    if head is not None:
        check_index("head", head, maps.n_heads)
    (r0, r1), (c0, c1) = _slice_ranges(maps, rows, cols)
    heads = None if head is None else [head]
    n_heads = maps.n_heads if head is None else 1
    binary = MEDIA_TYPE in request.headers.get("accept", "")
    tokens = list(maps.tokens)
    if format == "topk":
        if stride != 1:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                f"format=topk reads full-resolution rows: send stride=1 (got stride={stride})",
            )
        if k > c1 - c0:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                f"k={k} is more than the {c1 - c0} keys in cols={c0}:{c1}: use 1 <= k <= {c1 - c0}",
            )
        _check_slice_bytes(2 * n_heads * (r1 - r0) * k, "this top-k slice (indices and weights)")
        idx, w = top_k_slice(maps, layer, heads, (r0, r1), (c0, c1), k)
        if head is not None:
            idx, w = idx[0], w[0]
        if binary:
            extra = dict(run_id=run.id, layer=layer, head=head, rows=[r0, r1], cols=[c0, c1], k=k, tokens=tokens)
            return Response(pack_top_k(idx, w, "float16", **extra), media_type=MEDIA_TYPE)
        return AttentionTopKPublic(
            run_id=run.id,
            layer=layer,
            head=head,
            k=k,
            shape=list(w.shape),
            rows=[r0, r1],
            cols=[c0, c1],
            tokens=tokens,
            indices=idx.tolist(),
            weights=w.tolist(),
        )
    cells = n_heads * -(-(r1 - r0) // stride) * -(-(c1 - c0) // stride)
    _check_slice_bytes(cells, "this slice")
    weights = pooled_slice(maps, layer, heads, (r0, r1), (c0, c1), stride, pool)
    if head is not None:
        weights = weights[0]
    if format is None:
        format = "float16" if binary else "json"
    if format != "json":
        extra = dict(run_id=run.id, layer=layer, head=head, tokens=tokens, rows=[r0, r1], cols=[c0, c1])
        blob = pack(weights, format, stride=stride, pool=pool, **extra)
        return Response(blob, media_type=MEDIA_TYPE)
    return AttentionSlicePublic(
        run_id=run.id,
        layer=layer,
        head=head,
        shape=list(weights.shape),
        tokens=tokens,
        weights=weights.tolist(),
        rows=[r0, r1],
        cols=[c0, c1],
        stride=stride,
        pool=pool,
    )
