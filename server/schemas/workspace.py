"""Schemas of the workspace of runs: ``GET /runs`` (a page of summaries), ``PATCH /runs/{id}`` (name,
pin) and what they answer. A run's maps are not here: ``GET /runs/{id}`` and its attention routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_RUN_NAME = 200  # characters of a run's name (the database column's width)
MAX_LIST_LIMIT = 100  # runs per page of GET /runs
MAX_LIST_OFFSET = 1_000_000
MAX_LIST_QUERY = 200  # characters of the q filter


class RunUpdate(BaseModel):
    """Body of ``PATCH /runs/{id}``: a new ``name`` (``""`` or null removes it) and/or ``pinned``;
    at least one of them (``minProperties`` in the schema)."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"minProperties": 1})

    name: str | None = Field(
        None,
        max_length=MAX_RUN_NAME,
        description=f"the run's name, at most {MAX_RUN_NAME} characters; empty or null removes it",
        examples=["cat vs dog, layer 2"],
        json_schema_extra={"pattern": "^[^\\x00-\\x1f]*$"},  # one line: no control characters (checked below)
    )
    # boolean in the schema (null is not a value of it); absent means unchanged
    pinned: bool = Field(None, description="pinned runs are listed first; true or false")  # type: ignore[assignment]

    @field_validator("name")
    @classmethod
    def _no_control_characters(cls, v: str | None) -> str | None:
        if v is not None and any(ord(c) < 32 for c in v):
            raise ValueError("name has a control character (newline, tab, ...); send one line of text")
        return v

    @model_validator(mode="after")
    def _something(self) -> RunUpdate:
        if not self.model_fields_set & {"name", "pinned"}:
            raise ValueError("send 'name' and/or 'pinned': an empty body changes nothing")
        return self


class RunSummaryPublic(BaseModel):
    """One stored run as the workspace lists it."""

    id: str
    model: str
    source_kind: Literal["text", "sample", "upload"] = Field(..., description="a text, a data-set sample or an upload")
    text: str = Field(..., description="the run's text (empty for an image), cut at 2,000 characters")
    text_truncated: bool = Field(..., description="true when text was cut (GET /runs/{id} has all of it)")
    dataset: str | None = Field(None, description="a sample run's data set")
    index: int | None = Field(None, description="a sample run's index in it")
    name: str | None = None
    pinned: bool
    n_tokens: int | None = Field(..., description="positions of the run (null: not counted when it was stored)")
    created: float = Field(..., description="Unix seconds")
    last_used: float = Field(..., description="Unix seconds of its last read")


class RunSummaryList(BaseModel):
    """A page of ``GET /runs``: pinned runs first, then newest first."""

    items: list[RunSummaryPublic]
    total: int = Field(..., description="runs matching the filters, over all pages")
    offset: int
    limit: int
