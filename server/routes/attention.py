"""A run's attention, read without the whole stack: one layer ``[head, query, key]`` or one head ``[query,
key]`` over a window of rows and columns, pooled by a stride or as each row's top-k keys, and every layer's
row of one query position; JSON or the compact binary encoding (``analysis/codec.py``). What is read, and
whether it may be, is decided by ``analysis/attention_reads.py``; these routes encode its typed result."""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from fastapi import APIRouter, HTTPException, Path, Query, Request, Response, status

from attnscope.analysis.attention_reads import (
    SliceRequestError,
    SliceTooLargeError,
    TopKWindow,
    query_rows,
    read_window,
)
from attnscope.analysis.codec import MEDIA_TYPE, pack, pack_top_k
from attnscope.analysis.slices import parse_range
from attnscope.server.deps import RunDep, ServiceDep
from attnscope.server.request_executor import heavy
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
    ThumbnailsPublic,
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
@heavy
def read_attention_rows(
    run: RunDep,
    request: Request,
    query: Annotated[int, Path(ge=0, le=2**31 - 1, description="zero-based query position")],
    format: Annotated[
        Literal["json", "float16", "uint8"] | None,
        Query(description="json (default), or a compact binary encoding; overrides Accept"),
    ] = None,
):
    got = query_rows(run.capture.maps, query)  # [layer, head, key]: one row of each layer, not the stack
    if format is None:
        format = "float16" if MEDIA_TYPE in request.headers.get("accept", "") else "json"
    if format != "json":
        blob = pack(got.weights, format, run_id=run.id, query=query, tokens=got.tokens)
        return Response(blob, media_type=MEDIA_TYPE)
    return AttentionRowsPublic(
        run_id=run.id,
        query=query,
        token=got.token,
        shape=list(got.weights.shape),
        tokens=got.tokens,
        weights=got.weights.tolist(),
    )


ATTENTION_FORMATS = ("json", "float16", "uint8", "topk")


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
@heavy
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
    maps = run.capture.maps
    try:
        got = read_window(
            maps, layer, head, rows, cols, stride=stride, pool=pool, k=k if format == "topk" else None,
            max_bytes=MAX_SLICE_BYTES,
        )  # fmt: skip
    except SliceTooLargeError as exc:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, str(exc)) from None
    except SliceRequestError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    binary = MEDIA_TYPE in request.headers.get("accept", "")
    tokens = list(maps.tokens)
    window = {"rows": list(got.rows), "cols": list(got.cols)}
    if isinstance(got, TopKWindow):
        if binary:
            extra = dict(run_id=run.id, layer=layer, head=head, **window, k=k, tokens=tokens)
            return Response(pack_top_k(got.indices, got.weights, "float16", **extra), media_type=MEDIA_TYPE)
        return AttentionTopKPublic(
            run_id=run.id,
            layer=layer,
            head=head,
            k=k,
            shape=list(got.weights.shape),
            **window,
            tokens=tokens,
            indices=got.indices.tolist(),
            weights=got.weights.tolist(),
        )
    if format is None:
        format = "float16" if binary else "json"
    if format != "json":
        extra = dict(run_id=run.id, layer=layer, head=head, tokens=tokens, **window)
        blob = pack(got.weights, format, stride=stride, pool=pool, **extra)
        return Response(blob, media_type=MEDIA_TYPE)
    return AttentionSlicePublic(
        run_id=run.id,
        layer=layer,
        head=head,
        shape=list(got.weights.shape),
        tokens=tokens,
        weights=got.weights.tolist(),
        **window,
        stride=stride,
        pool=pool,
    )


@router.get(
    "/{run_id}/thumbnails",
    response_model=ThumbnailsPublic,
    responses={
        **ERRORS,
        200: {
            "content": {MEDIA_TYPE: {}},
            "description": f"JSON, or with format=float16 (or Accept: {MEDIA_TYPE}) a compact binary blob of "
            "[layer, head, cells, cells + len(keys)]: each row's means, then its key_means (header: stride, keys)",
        },
    },
    summary="The model view's thumbnails: every head's map mean-pooled to at most 64 x 64 cells, and each block "
    "of rows' mean weight on the first token and the special positions (computed once per run and kept)",
)
@heavy
def read_thumbnails(
    run: RunDep,
    service: ServiceDep,
    request: Request,
    format: Annotated[
        Literal["json", "float16"] | None, Query(description="json (default) or float16; overrides Accept")
    ] = None,
    layers: Annotated[
        str | None,
        Query(
            pattern=RANGE_PATTERN,
            max_length=13,
            description="layers 'start:stop' (half-open), default every layer: a long run not made with "
            "thumbnails can be read a few layers a request",
        ),
    ] = None,
):
    maps = run.capture.maps
    try:
        first, stop = parse_range(layers, maps.n_layers, "layers")
    except ValueError as exc:
        message = str(exc).replace(" positions", " layers")  # parse_range speaks of positions
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, message) from None
    got = service.thumbnails.get(run, range(first, stop))
    if format is None:
        format = "float16" if MEDIA_TYPE in request.headers.get("accept", "") else "json"
    if format != "json":
        both = np.concatenate([got.means, got.key_means], axis=-1)  # [layer, head, cells, cells + keys]
        header = dict(run_id=run.id, stride=got.stride, keys=list(got.keys), cells=got.means.shape[-1])
        blob = pack(both, format, layers=[first, stop], **header)
        return Response(blob, media_type=MEDIA_TYPE)
    return ThumbnailsPublic(
        run_id=run.id,
        layers=[first, stop],
        stride=got.stride,
        keys=list(got.keys),
        shape=list(got.means.shape),
        means=got.means.tolist(),
        key_means=got.key_means.tolist(),
    )
