"""The workspace of runs: list the runs the database holds (every session's), name and pin one,
delete one. Reading a run and its maps stays in ``routes/runs.py`` and ``routes/attention.py``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response, status

from attnscope.server.db.run_records import RunSummary
from attnscope.server.deps import ServiceDep
from attnscope.server.errors import ApiError, error_responses
from attnscope.server.schemas import (
    MAX_LIST_LIMIT,
    MAX_LIST_OFFSET,
    MAX_LIST_QUERY,
    RunSummaryList,
    RunSummaryPublic,
    RunUpdate,
)

router = APIRouter(prefix="/runs", tags=["runs"])
RunId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[0-9a-zA-Z_-]+$", description="a run id")]


def summary_public(s: RunSummary) -> RunSummaryPublic:
    source = s.source or {}
    return RunSummaryPublic(
        id=s.id,
        model=s.model,
        source_kind=s.source_kind,
        text=s.text,
        text_truncated=s.text_truncated,
        dataset=source.get("dataset") if s.source_kind == "sample" else None,
        index=source.get("index") if s.source_kind == "sample" else None,
        name=s.name,
        pinned=s.pinned,
        n_tokens=s.n_tokens,
        created=s.created,
        last_used=s.last_used,
    )


def _records(service):
    if service.records is None:
        raise ApiError(status.HTTP_503_SERVICE_UNAVAILABLE, "this server keeps no database of runs")
    return service.records


def _unknown(run_id: str) -> ApiError:
    return ApiError(
        status.HTTP_404_NOT_FOUND,
        f"no run with id {run_id!r} in the database (deleted, or never made here); GET /api/v1/runs lists the runs",
    )


@router.get(
    "",
    response_model=RunSummaryList,
    responses=error_responses(503),
    summary="The runs the database holds (every session's): pinned first, then newest first, a page at a time",
)
def read_runs(
    service: ServiceDep,
    offset: Annotated[int, Query(ge=0, le=MAX_LIST_OFFSET, description="runs to skip")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT, description="runs in this page")] = 50,
    model: Annotated[str | None, Query(min_length=1, max_length=200, description="only this model's runs")] = None,
    pinned: Annotated[bool | None, Query(description="only pinned (true) or unpinned (false) runs")] = None,
    q: Annotated[
        str | None, Query(min_length=1, max_length=MAX_LIST_QUERY, description="a substring of the name or text")
    ] = None,
) -> RunSummaryList:
    page = _records(service).list(offset=offset, limit=limit, model=model, pinned=pinned, query=q)
    return RunSummaryList(items=[summary_public(s) for s in page.items], total=page.total, offset=offset, limit=limit)


@router.patch(
    "/{run_id}",
    response_model=RunSummaryPublic,
    responses=error_responses(404, 503),
    summary="Name a run (an empty name removes it) and/or pin it",
)
def update_run(run_id: RunId, body: RunUpdate, service: ServiceDep) -> RunSummaryPublic:
    fields = body.model_fields_set
    name = body.name.strip() if "name" in fields and body.name else None
    clear = "name" in fields and not name
    pinned = body.pinned if "pinned" in fields else None
    updated = _records(service).update(run_id, name=name, clear_name=clear, pinned=pinned)
    if updated is None:
        raise _unknown(run_id)
    return summary_public(updated)


@router.delete(
    "/{run_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=error_responses(404, 503),
    summary="Delete a run: its record, its maps in memory and its recordings (a link to it then answers 404)",
)
def delete_run(run_id: RunId, service: ServiceDep) -> Response:
    _records(service)
    if not service.delete_run(run_id):
        raise _unknown(run_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
