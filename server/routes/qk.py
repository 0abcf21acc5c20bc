"""Why a head attends (``docs/methods/qk-attribution.md``): the query/key view and QK attribution of
one (head, query, key) of a run (``GET /runs/{id}/qk``), and composition scores of a model's heads
from its weights (``GET /models/{name}/composition``)."""

from __future__ import annotations

from typing import Annotated, Literal

import torch
from fastapi import APIRouter, Query, status

from attnscope.pipelines.qk.explain import explain_pair
from attnscope.server.deps import RunDep, ServiceDep
from attnscope.server.errors import ApiError, error_responses
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import (
    MAX_QK_PARTS,
    MAX_QK_TERMS,
    CompositionPublic,
    QKAttribution,
    QKPublic,
    QKTerm,
    QKVectors,
)

runs_router = APIRouter(prefix="/runs", tags=["qk"])
models_router = APIRouter(prefix="/models", tags=["qk"])
ERRORS = error_responses(
    404,
    {
        422: "the model cannot answer this: its family has no Sites entry or its heads are content-free (the part "
        "missing is named), or a layer, head or position is out of range, or the key comes after the query of a "
        "causal model (the detail names the range)"
    },
)
Index = Annotated[int, Query(ge=0, le=1_000_000)]


def _refused(exc: Exception) -> ApiError:
    return ApiError(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc))


def _floats(t: torch.Tensor) -> list[float]:
    return [float(v) for v in t.detach().double().cpu()]


@runs_router.get(
    "/{run_id}/qk",
    response_model=QKPublic,
    responses=ERRORS,
    summary="Why a head attends: the query and key of one (query, key) pair after RoPE, their product, the score "
    "and weight, and the score split exactly into query-part x key-part terms (earlier heads, MLPs, embedding, "
    "biases; norms frozen at their clean scales)",
)
@heavy
def read_qk(
    run: RunDep,
    service: ServiceDep,
    layer: Index,
    head: Index,
    query: Annotated[int, Query(ge=0, le=1_000_000, description="query position (a row of the map)")],
    key: Annotated[int, Query(ge=0, le=1_000_000, description="key position (a column of the map)")],
    parts: Annotated[int, Query(ge=1, le=MAX_QK_PARTS, description="query and key parts listed in the matrix")] = 24,
    terms: Annotated[int, Query(ge=1, le=MAX_QK_TERMS, description="top terms listed")] = 20,
) -> QKPublic:
    backend = service.models.get(run.model)
    try:
        ids = run.capture.token_ids
        inp = backend.encode_image(run.image) if run.image is not None else backend.encode_ids(list(ids))
        ex = explain_pair(backend, inp, layer, head, query, key)
    except ValueError as exc:
        raise _refused(exc) from None
    att, view = ex.attribution, ex.view
    q_labels, k_labels, matrix = att.condensed(parts)
    top = att.top_terms(terms)
    return QKPublic(
        run_id=run.id,
        layer=layer,
        head=head,
        kv_head=view.kv_head,
        query=query,
        key=key,
        query_token=ex.tokens[query],
        key_token=ex.tokens[key],
        scale=view.scale,
        view=QKVectors(
            query=_floats(view.query),
            key=_floats(view.key),
            product=_floats(view.product),
            score=view.score,
            weight=view.weight,
            softcap=ex.softcap,
            logit=ex.capped_score,
        ),
        attribution=QKAttribution(
            query_parts=list(q_labels),
            key_parts=list(k_labels),
            matrix=[_floats(row) for row in matrix],
            key_totals=dict(zip(att.key_labels, _floats(att.key_totals))),
            query_totals=dict(zip(att.query_labels, _floats(att.query_totals))),
            top_terms=[QKTerm(query_part=t.query_part, key_part=t.key_part, value=t.value) for t in top],
            top_key_part=att.top_key_part(),
            conservation_error=att.conservation_error,
            residual_error=att.residual_error,
        ),
    )


@models_router.get(
    "/{name}/composition",
    response_model=CompositionPublic,
    responses=ERRORS,
    summary="Q-, K- or V-composition scores (Elhage et al. 2021) between every pair of heads in different layers, "
    "from the weights (normalised Frobenius norms, grouped-query aware), with the random-matrix baseline",
)
@heavy
def read_composition(
    name: str,
    service: ServiceDep,
    mode: Annotated[Literal["q", "k", "v"], Query(description="which input of the later head: q, k or v")] = "k",
) -> CompositionPublic:
    backend = service.models.get(name)
    comp = service.composition.get(backend, mode)  # no Sites entry: 422 (server/errors.py)
    s = comp.scores[mode]  # [src_layer, src_head, dst_layer, dst_head]
    mean, std = comp.baseline[mode]
    return CompositionPublic(
        model=name,
        mode=mode,
        n_layers=int(s.shape[0]),
        n_heads=int(s.shape[1]),
        scores=s.tolist(),
        layer_max=s.amax(dim=(1, 3)).tolist(),
        baseline_mean=mean,
        baseline_std=std,
    )
