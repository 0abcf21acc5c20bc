"""Runs: create one (model + text or image), read it, its image and its convolution-vs-attention view. Its
attention, a slice or row at a time, is read through ``routes/attention.py``."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, File, Form, HTTPException, Query, Response, UploadFile, status

from attnscope.analysis.indices import check_index
from attnscope.models.capture import GenerateOptions
from attnscope.models.inputs import MAX_IMAGE_BYTES, encode_png
from attnscope.server.deps import RunDep, ServiceDep, known_model
from attnscope.server.predictions import prediction_of
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import (
    ConvAttentionPublic,
    ErrorBody,
    Generation,
    ImageSource,
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
        prediction=prediction_of(cap.output),
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
    dependencies=[Depends(known_model)],  # a model the registry refuses never takes a heavy slot
    summary="Run a text (text models) or a dataset sample (vision models) and keep its attention; causal LMs "
    "also predict the next token at every position and can generate",
)
@heavy
def create_run(body: RunCreate, service: ServiceDep) -> RunPublic:
    # plain def: FastAPI runs it in the threadpool, so model work never blocks the event loop
    if body.sample is not None:
        run = service.create_sample_run(body.model, body.sample.dataset, body.sample.index)
        if body.thumbnails:
            service.thumbnails.get(run)
        return to_public(run)
    generate = None
    if body.generate is not None:
        g = body.generate
        generate = GenerateOptions(
            g.max_new_tokens, None if g.greedy or g.temperature is None else g.temperature, g.seed
        )
    run = service.create_run(body.model, body.text, generate=generate, chat=body.chat)
    if body.thumbnails:
        service.thumbnails.get(run)  # kept: GET /runs/{id}/thumbnails answers at once
    return to_public(run)


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
@heavy
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
def read_run(
    run: RunDep,
    prediction: Annotated[
        Literal["full", "summary"],
        Query(
            description="full: the prediction with its per-position lists (a causal LM's top-k and loss at every "
            "position: 3.4 MB of JSON at 4,096 tokens); summary: without them (top_k, loss and embedding null)"
        ),
    ] = "full",
) -> RunPublic:
    public = to_public(run)
    if prediction == "summary":
        slim = public.prediction.model_copy(update={"top_k": None, "loss": None, "embedding": None})
        return public.model_copy(update={"prediction": slim})
    return public


@router.get(
    "/{run_id}/conv-vs-attention",
    response_model=ConvAttentionPublic,
    responses=ERRORS,
    summary="conv-attention runs: one channel of the first layer as the convolution and as the attention "
    "layer built from it, side by side",
)
@heavy
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
