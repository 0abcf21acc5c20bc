"""Runs: create one (model + text), read it, read its attention one head or one layer at a time."""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from fastapi import APIRouter, File, Form, HTTPException, Path, Query, Request, Response, UploadFile, status

from attnscope.analysis.codec import MEDIA_TYPE, pack, pack_top_k
from attnscope.analysis.indices import check_index
from attnscope.models.capture import GenerateOptions
from attnscope.models.inputs import MAX_IMAGE_BYTES, encode_png
from attnscope.server.deps import RunDep, ServiceDep
from attnscope.server.executor import heavy
from attnscope.server.schemas import (
    MAX_SLICE_BYTES,
    MAX_STRIDE,
    MAX_TOP_K,
    RANGE_PATTERN,
    AttentionRowsPublic,
    AttentionSlicePublic,
    AttentionTopKPublic,
    ConvAttentionPublic,
    ErrorBody,
    Generation,
    ImageSource,
    Prediction,
    RunCreate,
    RunPublic,
)
from attnscope.server.store import Run

router = APIRouter(prefix="/runs", tags=["runs"])
MAX_LAYER, MAX_HEAD = 63, 255  # the schema's bounds; a run's own counts are checked by the route (422)

ERRORS = {
    404: {"model": ErrorBody, "description": "unknown model or run"},
    413: {"model": ErrorBody, "description": "text longer than the model accepts, or image too large"},
    415: {"model": ErrorBody, "description": "the upload is not a PNG or JPEG image"},
    422: {
        "model": ErrorBody,
        "description": "invalid input (empty text, wrong modality, bad image, layer/head out of range, "
        "generate or chat sent to a model that is no causal LM, ...)",
    },
}


def to_public(run: Run) -> RunPublic:
    maps, cap = run.capture.maps, run.capture
    output = {k: v for k, v in cap.output.items() if k != "generation"}
    generation = cap.output.get("generation")
    attention = cap.attention
    return RunPublic(
        id=run.id,
        model=run.model,
        text=run.text,
        tokens=list(maps.tokens),
        token_ids=None if cap.token_ids is None else [int(i) for i in cap.token_ids],
        special=list(maps.special),
        grid=list(maps.grid) if maps.grid else None,
        shape=list(maps.shape),
        causal=maps.causal,
        kv_heads=None if attention is None else attention.kv_heads,
        kv_head_of=None if attention is None else list(attention.kv_head_of),
        prediction=Prediction(**output),
        created=run.created,
        image=ImageSource(**run.source) if run.source else None,
        chat=bool((run.options or {}).get("chat")),
        generation=None if generation is None else Generation(**generation),
    )


@router.post(
    "",
    response_model=RunPublic,
    status_code=status.HTTP_201_CREATED,
    responses=ERRORS,
    summary="Run a text (text models) or a dataset sample (vision models) and keep its attention; causal LMs "
    "also predict the next token at every position and can generate",
)
@heavy
def create_run(body: RunCreate, service: ServiceDep) -> RunPublic:
    # plain def: FastAPI runs it in the threadpool, so model work never blocks the event loop
    if body.sample is not None:
        return to_public(service.create_sample_run(body.model, body.sample.dataset, body.sample.index))
    generate = None
    if body.generate is not None:
        g = body.generate
        generate = GenerateOptions(
            g.max_new_tokens, None if g.greedy or g.temperature is None else g.temperature, g.seed
        )
    return to_public(service.create_run(body.model, body.text, generate=generate, chat=body.chat))


@router.post(
    "/image",
    response_model=RunPublic,
    status_code=status.HTTP_201_CREATED,
    responses=ERRORS,
    summary=f"Upload a PNG/JPEG (at most {MAX_IMAGE_BYTES // 2**20} MB, 4096x4096 pixels, 1 or 3 "
    "channels) and run it through a vision model",
)
@heavy
def create_image_run(
    service: ServiceDep,
    file: Annotated[UploadFile, File(description="PNG or JPEG image")],
    model: Annotated[str, Form(min_length=1, max_length=200, description="a vision model from GET /models")],
) -> RunPublic:
    blob = file.file.read(MAX_IMAGE_BYTES + 1)
    return to_public(service.create_upload_run(model, blob))


@router.get(
    "/{run_id}/image",
    responses={**ERRORS, 200: {"content": {"image/png": {}}}},
    summary="The image a vision run's model saw (after preparation), as PNG",
)
def read_run_image(run: RunDep) -> Response:
    if run.image is None:
        # the run exists, so not a 404: the request does not fit it (a 404 here told clients, and
        # schemathesis' stateful check, that a run just created was gone)
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"run {run.id} is a text run and has no image; GET /api/v1/runs/{{run_id}}/image is for runs made "
            "with POST /api/v1/runs/image or a vision model",
        )
    return Response(encode_png(run.image), media_type="image/png")


@router.get("/{run_id}", response_model=RunPublic, responses=ERRORS, summary="Read a run")
def read_run(run: RunDep) -> RunPublic:
    return to_public(run)


@router.get(
    "/{run_id}/conv-vs-attention",
    response_model=ConvAttentionPublic,
    responses=ERRORS,
    summary="conv-attention runs: one channel of the first layer as the convolution and as the attention "
    "layer built from it, side by side",
)
def read_conv_vs_attention(run: RunDep, channel: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0) -> ConvAttentionPublic:
    from attnscope.models.registry import get_spec

    feats = run.capture.extras.get("conv_vs_attention")
    if get_spec(run.model).family != "conv-as-attention" or feats is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"run {run.id} is not a conv-as-attention run; create one with model conv-attention",
        )
    _check_range("channel", channel, feats.shape[-1])
    side = int(round(feats.shape[1] ** 0.5))
    conv, attn = feats[0, :, channel].reshape(side, side), feats[1, :, channel].reshape(side, side)
    return ConvAttentionPublic(
        run_id=run.id,
        channel=channel,
        n_channels=int(feats.shape[-1]),
        grid=[side, side],
        conv=conv.tolist(),
        attention=attn.tolist(),
        max_abs_diff=float(abs(feats[0] - feats[1]).max()),
    )


def _check_range(name: str, value: int | None, size: int) -> None:
    if value is not None:
        check_index(name, value, size)


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
    _check_range("layer", layer, maps.n_layers)
    _check_range("head", head, maps.n_heads)
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
