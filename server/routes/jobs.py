"""Dataset-level jobs: submit, poll progress, download the result as JSON or CSV, cancel."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import ValidationError

from attnscope.server.jobs import JOB_KINDS, Job, JobStore, rows_to_csv
from attnscope.server.schemas import JobCreate, JobKindPublic, JobPublic

router = APIRouter(prefix="/jobs", tags=["jobs"])


def _store(request: Request) -> JobStore:
    return request.app.state.jobs


def to_public(job: Job) -> JobPublic:
    formats = []
    if job.status == "done":
        formats = ["json"] + (["csv"] if isinstance(job.result, dict) and job.result.get("rows") else [])
    return JobPublic(
        id=job.id,
        kind=job.kind,
        params=job.params,
        status=job.status,
        progress=job.progress,
        done=job.done,
        total=job.total,
        message=job.message,
        error=job.error,
        created=job.created,
        started=job.started,
        finished=job.finished,
        result_formats=formats,
    )


def _job(request: Request, job_id: str) -> Job:
    job = _store(request).get(job_id)
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
)
def create_job(body: JobCreate, request: Request) -> JobPublic:
    kind = JOB_KINDS.get(body.kind)
    if kind is None:
        known = ", ".join(sorted(JOB_KINDS)) or "none"
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"unknown job kind {body.kind!r}; known kinds: {known}"
        )
    try:
        params = kind.params_model.model_validate(body.params)
    except ValidationError as exc:
        msgs = "; ".join(
            f"params.{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors()
        )
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, msgs) from None
    return to_public(_store(request).submit(body.kind, params))


@router.get("", response_model=list[JobPublic], summary="All jobs kept, newest last")
def read_jobs(request: Request) -> list[JobPublic]:
    return [to_public(j) for j in _store(request).list()]


@router.get("/{job_id}", response_model=JobPublic, summary="A job's status and progress")
def read_job(job_id: str, request: Request) -> JobPublic:
    return to_public(_job(request, job_id))


@router.get(
    "/{job_id}/result",
    summary="A finished job's result (JSON, or CSV of its rows)",
    responses={200: {"content": {"application/json": {}, "text/csv": {}}}},
)
def read_job_result(job_id: str, request: Request, format: Annotated[Literal["json", "csv"], Query()] = "json"):
    job = _job(request, job_id)
    if job.status != "done":
        detail = (
            f"job {job_id} is {job.status}"
            + (f": {job.error}" if job.error else "")
            + ("; poll GET /api/v1/jobs/{id} until status is done" if job.status in ("queued", "running") else "")
        )
        raise HTTPException(status.HTTP_409_CONFLICT, detail)
    filename = f"attnscope-{job.kind}-{job.id}.{format}"
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    if format == "csv":
        rows = job.result.get("rows") if isinstance(job.result, dict) else None
        if not rows:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT, "this job's result has no table rows; use format=json"
            )
        return PlainTextResponse(rows_to_csv(rows), media_type="text/csv", headers=headers)
    return JSONResponse(job.result, headers=headers)


@router.delete("/{job_id}", response_model=JobPublic, summary="Cancel a queued or running job")
def cancel_job(job_id: str, request: Request) -> JobPublic:
    _job(request, job_id)
    return to_public(_store(request).cancel(job_id))
