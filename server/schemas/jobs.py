"""Schemas of dataset-level jobs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class JobCreate(BaseModel):
    """Body of ``POST /jobs``: a registered job kind and its parameters."""

    kind: str = Field(..., description="job kind, e.g. census or faithfulness (see GET /jobs/kinds)")
    params: dict = Field(default_factory=dict, description="parameters of that kind")


class JobPublic(BaseModel):
    id: str
    kind: str
    params: dict
    status: Literal["queued", "running", "done", "failed", "cancelled"]
    progress: float = Field(..., ge=0, le=1)
    done: int
    total: int
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
