"""Schemas of dataset-level jobs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class JobCreate(BaseModel):
    """Body of ``POST /jobs``: a registered job kind and its parameters."""

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: str = Field(..., description="job kind, e.g. census or faithfulness (see GET /jobs/kinds)")
    params: dict = Field(default_factory=dict, description="parameters of that kind")


JobStatus = Literal["queued", "running", "done", "failed", "cancelled", "interrupted"]


class JobPublic(BaseModel):
    """A job as the database holds it; it survives restarts of the API."""

    id: str
    kind: str
    params: dict
    status: JobStatus = Field(
        ...,
        description="queued, running, done, failed, cancelled, or interrupted (the API stopped while it ran: "
        "POST /jobs/{id}/resume continues it from its last saved shard)",
    )
    progress: float = Field(..., ge=0, le=1)
    done: int = Field(..., description="examples finished (saved shards plus the running shards' progress)")
    total: int = Field(..., description="examples the job covers (0 until it starts)")
    shards_done: int = Field(0, description="shards finished and saved in the database (checkpoints)")
    shards_total: int = Field(0, description="shards of examples the job is split into")
    worker: str | None = Field(None, description="what ran it: in-process@host:pid or ray@address")
    message: str = ""
    error: str | None = None
    created: float
    started: float | None = None
    finished: float | None = None
    result_formats: list[str] = Field(default_factory=list, description="formats of GET /jobs/{id}/result")


class JobKindPublic(BaseModel):
    name: str
    description: str
    params_schema: dict
