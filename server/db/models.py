"""SQLAlchemy 2 models of the three tables: ``runs``, ``jobs`` and ``job_shards``.

JSON values are stored as text (``json.dumps`` with NaN allowed: a census mean may be NaN, which
PostgreSQL's own JSON types refuse), times as Unix seconds (floats).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Integer, LargeBinary, String, Text, false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def dumps(value: Any) -> str:
    """JSON text (NaN allowed: the tables store JSON as text)."""
    return json.dumps(value, allow_nan=True)


class Base(DeclarativeBase):
    pass


class RunRecord(Base):
    """What it takes to compute a run again: model, input and options (the maps are recomputed)."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # content hash of model + input + options
    model: Mapped[str] = mapped_column(String(200))
    source_kind: Mapped[str] = mapped_column(String(16))  # text | sample | upload
    text: Mapped[str] = mapped_column(Text, default="")
    options: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON: generate / chat
    source: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON: sample or upload description
    image_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    image: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)  # the uploaded file's bytes
    token_ids: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON list
    prediction: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON
    created: Mapped[float] = mapped_column(Float, index=True)
    last_used: Mapped[float] = mapped_column(Float)
    name: Mapped[str | None] = mapped_column(String(200), nullable=True)  # the user's, from PATCH /runs/{id}
    pinned: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    n_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)  # positions (query axis of the maps)


class JobRecord(Base):
    """A data-set job: what was asked, where it stands, and its result once done."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    params: Mapped[str] = mapped_column(Text)  # JSON
    status: Mapped[str] = mapped_column(String(16), index=True)
    done: Mapped[int] = mapped_column(Integer, default=0)
    total: Mapped[int] = mapped_column(Integer, default=0)
    shards_total: Mapped[int] = mapped_column(Integer, default=0)
    message: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[float] = mapped_column(Float)
    started: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished: Mapped[float | None] = mapped_column(Float, nullable=True)
    result: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON, once done


class ShardRecord(Base):
    """One finished shard of a job: examples ``[start, stop)`` and their partial result."""

    __tablename__ = "job_shards"

    job_id: Mapped[str] = mapped_column(String(32), ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    index: Mapped[int] = mapped_column(Integer, primary_key=True)
    start: Mapped[int] = mapped_column(Integer)
    stop: Mapped[int] = mapped_column(Integer)
    partial: Mapped[str] = mapped_column(Text)  # JSON
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    finished: Mapped[float] = mapped_column(Float)
