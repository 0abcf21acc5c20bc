"""Compare two runs head by head: Jensen-Shannon divergence, total variation, largest difference."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from attnscope.analysis.divergence import aligned_positions, comparable, head_divergences
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
    summary="Per-head divergences of run a from run b (same layers and heads; same tokens, or aligned ones)",
)
@heavy
def compare_heads(
    a: RUN_ID,
    b: RUN_ID,
    service: ServiceDep,
    align: Annotated[
        bool,
        Query(
            description="compare on aligned tokens (equal ones and one-for-one substitutions, rows renormalised), "
            "so texts of different token counts compare"
        ),
    ] = False,
) -> HeadComparisonPublic:
    run_a, run_b = get_run(a, service), get_run(b, service)
    maps_a, maps_b = run_a.capture.maps, run_b.capture.maps
    problem = comparable(maps_a, maps_b, aligned=align)
    positions = aligned_positions(list(maps_a.tokens), list(maps_b.tokens)) if align and not problem else None
    if positions is not None and len(positions[0]) < 2:
        problem = f"only {len(positions[0])} of their tokens align; aligned comparison needs at least 2"
    if problem:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"runs {a} and {b} cannot be compared: {problem}")
    d = head_divergences(maps_a, maps_b, positions)
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
        positions_a=positions[0] if positions else None,
        positions_b=positions[1] if positions else None,
    )
