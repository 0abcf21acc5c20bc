"""Compare two runs head by head: Jensen-Shannon divergence, total variation, largest difference."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from attnscope.analysis.divergence import comparable, head_divergences
from attnscope.server.deps import ServiceDep, get_run
from attnscope.server.errors import error_responses
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import HeadComparisonPublic

router = APIRouter(prefix="/compare", tags=["compare"])

RUN_ID = Annotated[str, Query(min_length=1, max_length=64, pattern=r"^[0-9A-Za-z_-]+$", description="a run id")]


@router.get(
    "/heads",
    response_model=HeadComparisonPublic,
    responses=error_responses(
        {404: "no run with one of the ids", 422: "the runs differ in layers, heads or tokens (the detail says how)"}
    ),
    summary="Per-head divergences of run a from run b (same layers, heads and tokens)",
)
@heavy
def compare_heads(a: RUN_ID, b: RUN_ID, service: ServiceDep) -> HeadComparisonPublic:
    run_a, run_b = get_run(a, service), get_run(b, service)
    maps_a, maps_b = run_a.capture.maps, run_b.capture.maps
    problem = comparable(maps_a, maps_b)
    if problem:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"runs {a} and {b} cannot be compared: {problem}")
    d = head_divergences(maps_a, maps_b)
    return HeadComparisonPublic(
        a=a,
        b=b,
        model_a=run_a.model,
        model_b=run_b.model,
        tokens_a=list(maps_a.tokens),
        tokens_b=list(maps_b.tokens),
        shape=[maps_a.n_layers, maps_a.n_heads, maps_a.n_tokens, maps_a.n_tokens],
        js=d.js.tolist(),
        tv=d.tv.tolist(),
        max_abs_diff=d.max_abs_diff.tolist(),
    )
