"""Dataset-level jobs: submit, poll progress, download the result as JSON or CSV, cancel, resume.

Jobs live in the database: they, their progress and their results survive restarts of the API.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import ValidationError

from attnscope.server.errors import ApiError, error_responses, public_message
from attnscope.server.jobs.kinds import JOB_KINDS, Job, ParamsError, rows_to_csv
from attnscope.server.jobs.manager import JobManager, NotResumableError, QueueFullError
from attnscope.server.result_tables import example_table
from attnscope.server.schemas import JOB_RESULTS, JobCreate, JobKindPublic, JobPublic, JobResultPublic
from attnscope.server.schemas.jobs import JobStatus

router = APIRouter(prefix="/jobs", tags=["jobs"])

NOT_FOUND = error_responses({404: "no job with this id"})


def _manager(request: Request) -> JobManager:
    return request.app.state.jobs


def to_public(job: Job) -> JobPublic:
    formats = []
    if job.status == "done":
        formats = ["json"] + (["csv"] if job.has_rows else [])
    return JobPublic(
        id=job.id,
        kind=job.kind,
        params=job.params,
        status=job.status,
        progress=job.progress,
        done=job.done,
        total=job.total,
        shards_done=job.shards_done,
        shards_total=job.shards_total,
        worker=job.worker,
        message=public_message(job.message) if job.message else job.message,
        error=public_message(job.error) if job.error else None,  # no server path in an answer
        created=job.created,
        started=job.started,
        finished=job.finished,
        result_formats=formats,
    )


def _job(request: Request, job_id: str) -> Job:
    job = _manager(request).get(job_id)
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no job with id {job_id!r}; list jobs with GET /api/v1/jobs")
    return job


@router.get("/kinds", response_model=list[JobKindPublic], summary="Job kinds and their parameters")
def read_job_kinds() -> list[JobKindPublic]:
    return [
        JobKindPublic(name=k.name, description=k.description, params_schema=k.params_model.model_json_schema())
        for k in JOB_KINDS.values()
    ]


@router.post(
    "",
    response_model=JobPublic,
    status_code=status.HTTP_202_ACCEPTED,
    summary="Start a dataset-level job; poll GET /jobs/{id} for progress",
    responses=error_responses(
        {
            422: "unknown kind or invalid params (the detail names the field)",
            429: "the job queue is full (ATTNSCOPE_MAX_QUEUED_JOBS): retry after the Retry-After header's seconds, "
            "or cancel a queued job; X-Queue-Length and X-Queue-Limit say how full",
        }
    ),
)
def create_job(body: JobCreate, request: Request) -> JobPublic:
    kind = JOB_KINDS.get(body.kind)
    if kind is None:
        known = ", ".join(sorted(JOB_KINDS)) or "none"
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"unknown job kind {body.kind!r}; known kinds: {known}"
        )
    try:
        params = kind.validate(body.params)
        if kind.resolve is not None:  # fixes what depends on the model (it loads it): the params stored
            params = kind.resolve(params, request.app.state.service.models)
    except ValidationError as exc:
        msgs = "; ".join(
            f"params.{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors()
        )
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, msgs) from None
    except ParamsError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    try:
        return to_public(_manager(request).submit(body.kind, params))
    except QueueFullError as exc:
        headers = {
            "Retry-After": str(exc.retry_after),
            "X-Queue-Length": str(exc.queued),
            "X-Queue-Limit": str(exc.limit),
        }
        raise ApiError(status.HTTP_429_TOO_MANY_REQUESTS, str(exc), code="busy", headers=headers) from None


@router.get("", response_model=list[JobPublic], summary="The newest jobs (from the database), oldest first")
def read_jobs(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000, description="at most this many, the newest")] = 100,
    kind: Annotated[str | None, Query(description="only jobs of this kind")] = None,
    status_: Annotated[JobStatus | None, Query(alias="status", description="only jobs in this state")] = None,
) -> list[JobPublic]:
    return [to_public(j) for j in _manager(request).list(limit, kind, status_)]


@router.get("/{job_id}", response_model=JobPublic, responses=NOT_FOUND, summary="A job's status and progress")
def read_job(job_id: str, request: Request) -> JobPublic:
    return to_public(_job(request, job_id))


def typed_result(kind: str, result):
    """``result`` (with its ``kind``) checked against its kind's model in ``JOB_RESULTS``, answered as
    stored (same fields in the same order); a kind without a model: ``result`` unchecked."""
    model = JOB_RESULTS.get(kind)
    if model is None or not isinstance(result, dict):
        return result
    result = {"kind": kind, **result}
    model.model_validate(result)
    return result


@router.get(
    "/{job_id}/result",
    response_model=JobResultPublic,
    summary="A finished job's result (JSON: the kind's *ResultPublic model, or CSV of its rows)",
    responses={
        200: {
            "description": "JSON: one model per job kind, told apart by `kind`; CSV: the result's `rows`",
            "content": {"application/json": {}, "text/csv": {"schema": {"type": "string"}}},
        },
        **NOT_FOUND,
        **error_responses(
            {
                409: "the job is not done (the detail says its state)",
                422: "format=csv of a result without table rows (or table=examples without per-example values)",
            }
        ),
    },
)
def read_job_result(
    job_id: str,
    request: Request,
    format: Annotated[Literal["json", "csv"], Query()] = "json",
    table: Annotated[
        Literal["rows", "examples"],
        Query(
            description="CSV: the result's rows, or the per-example values in long format "
            "(census, probe, faithfulness, head-effects)"
        ),
    ] = "rows",
):
    job = _job(request, job_id)
    if job.status != "done":
        detail = (
            f"job {job_id} is {job.status}"
            + (f": {job.error}" if job.error else "")
            + (f"; poll GET /api/v1/jobs/{job_id} until status is done" if job.status in ("queued", "running") else "")
            + (f"; resume it with POST /api/v1/jobs/{job_id}/resume" if job.status == "interrupted" else "")
        )
        raise HTTPException(status.HTTP_409_CONFLICT, detail)
    result = typed_result(job.kind, _manager(request).result(job_id))
    filename = f"attnscope-{job.kind}-{job.id}.{format}"
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    if format == "csv" and table == "examples":
        rows = example_table(job.kind, result)
        if not rows:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT, "this job's result keeps no per-example values; use table=rows"
            )
        return PlainTextResponse(rows_to_csv(rows), media_type="text/csv", headers=headers)
    if format == "csv":
        rows = result.get("rows") if isinstance(result, dict) else None
        if not rows:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT, "this job's result has no table rows; use format=json"
            )
        return PlainTextResponse(rows_to_csv(rows), media_type="text/csv", headers=headers)
    return JSONResponse(result, headers=headers)


@router.post(
    "/{job_id}/resume",
    response_model=JobPublic,
    status_code=status.HTTP_202_ACCEPTED,
    summary="Resume an interrupted or cancelled job from its last saved shard",
    responses={
        **NOT_FOUND,
        **error_responses({409: "the job is neither interrupted nor cancelled (the detail says its state)"}),
    },
)
def resume_job(job_id: str, request: Request) -> JobPublic:
    _job(request, job_id)
    try:
        return to_public(_manager(request).resume(job_id))
    except NotResumableError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None


@router.post(
    "/{job_id}/cancel",
    response_model=JobPublic,
    responses=NOT_FOUND,
    summary="Cancel a job: a queued one is cancelled at once, a running one at its next progress report; the job "
    "and its record stay (status cancelled), so this is a POST on the job, not a DELETE of it",
)
def cancel_job(job_id: str, request: Request) -> JobPublic:
    _job(request, job_id)
    return to_public(_manager(request).cancel(job_id))
