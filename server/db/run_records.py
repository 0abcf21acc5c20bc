"""Runs in the database: what it takes to compute a run again after a restart (the maps are not kept),
and the workspace's view of them: a page of summaries (name, pin, model, token count, times), renamed,
pinned or deleted."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from sqlalchemy import delete, func, or_, select, update

from attnscope.server.db.engine import Database
from attnscope.server.db.models import RunRecord, dumps


@dataclass(frozen=True)
class RunInput:
    """A stored run's input: ``source_kind`` text (``text``, ``options``), sample (``source``:
    dataset, index) or upload (``image``: the file's bytes)."""

    id: str
    model: str
    source_kind: str
    text: str
    options: dict | None
    source: dict | None
    image: bytes | None


TEXT_IN_LIST = 2000  # characters of a run's text in a summary (the rest: GET /runs/{id})


@dataclass(frozen=True)
class RunSummary:
    """A stored run as the workspace lists it; ``text`` cut at ``TEXT_IN_LIST`` characters
    (``text_truncated`` then), ``n_tokens`` None for a run stored before it was counted."""

    id: str
    model: str
    source_kind: str
    text: str
    text_truncated: bool
    source: dict | None
    name: str | None
    pinned: bool
    n_tokens: int | None
    created: float
    last_used: float


@dataclass(frozen=True)
class RunPage:
    """``items`` of one page of the listing and ``total``: how many runs match the filters."""

    items: list[RunSummary]
    total: int


def _summary(rec: RunRecord) -> RunSummary:
    text = rec.text or ""
    return RunSummary(
        rec.id,
        rec.model,
        rec.source_kind,
        text[:TEXT_IN_LIST],
        len(text) > TEXT_IN_LIST,
        None if rec.source is None else json.loads(rec.source),
        rec.name,
        bool(rec.pinned),
        rec.n_tokens,
        rec.created,
        rec.last_used,
    )


def _like(pattern: str) -> str:
    """``pattern`` as a literal substring for ``LIKE ... ESCAPE '\\'`` (its ``%`` and ``_`` kept as such)."""
    return "%" + pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class RunRecords:
    def __init__(self, db: Database):
        self.db = db

    def save(
        self,
        run_id: str,
        model: str,
        source_kind: str,
        *,
        text: str = "",
        options: dict | None = None,
        source: dict | None = None,
        image: bytes | None = None,
        image_sha256: str | None = None,
        token_ids: list[int] | None = None,
        prediction: dict | None = None,
        n_tokens: int | None = None,
    ) -> None:
        """Insert the run, or mark it used when it is there already (same id, same content; a record
        stored before runs were counted gets its ``n_tokens`` then)."""
        now = time.time()
        with self.db.session() as s, s.begin():
            if s.get(RunRecord, run_id) is not None:
                count = func.coalesce(RunRecord.n_tokens, n_tokens)
                s.execute(update(RunRecord).where(RunRecord.id == run_id).values(last_used=now, n_tokens=count))
                return
            s.add(
                RunRecord(
                    id=run_id,
                    model=model,
                    source_kind=source_kind,
                    text=text,
                    options=None if options is None else dumps(options),
                    source=None if source is None else dumps(source),
                    image_sha256=image_sha256,
                    image=image,
                    token_ids=None if token_ids is None else dumps(token_ids),
                    prediction=None if prediction is None else dumps(prediction),
                    n_tokens=n_tokens,
                    pinned=False,
                    created=now,
                    last_used=now,
                )
            )

    def get(self, run_id: str) -> RunInput | None:
        with self.db.session() as s, s.begin():
            rec = s.get(RunRecord, run_id)
            if rec is None:
                return None
            rec.last_used = time.time()
            return RunInput(
                rec.id,
                rec.model,
                rec.source_kind,
                rec.text,
                None if rec.options is None else json.loads(rec.options),
                None if rec.source is None else json.loads(rec.source),
                rec.image,
            )

    def list(
        self,
        offset: int = 0,
        limit: int = 50,
        model: str | None = None,
        pinned: bool | None = None,
        query: str | None = None,
    ) -> RunPage:
        """Runs pinned first, then newest first; ``model``, ``pinned`` and ``query`` (a substring of
        the name or the text, any case) filter them; ``offset``/``limit`` page them."""
        conditions = []
        if model is not None:
            conditions.append(RunRecord.model == model)
        if pinned is not None:
            conditions.append(RunRecord.pinned.is_(pinned))
        if query:
            like = _like(query.lower())
            conditions.append(
                or_(
                    func.lower(RunRecord.name).like(like, escape="\\"),
                    func.lower(RunRecord.text).like(like, escape="\\"),
                )
            )
        with self.db.session() as s, s.begin():
            total = s.scalar(select(func.count()).select_from(RunRecord).where(*conditions))
            order = (RunRecord.pinned.desc(), RunRecord.created.desc(), RunRecord.id)
            recs = s.scalars(select(RunRecord).where(*conditions).order_by(*order).offset(offset).limit(limit)).all()
            return RunPage([_summary(r) for r in recs], int(total or 0))

    def summary(self, run_id: str) -> RunSummary | None:
        with self.db.session() as s, s.begin():
            rec = s.get(RunRecord, run_id)
            return None if rec is None else _summary(rec)

    def update(self, run_id: str, *, name: str | None = None, clear_name: bool = False, pinned: bool | None = None):
        """Rename (``name``; ``clear_name`` removes it) and/or pin the run; its summary, None when unknown."""
        with self.db.session() as s, s.begin():
            rec = s.get(RunRecord, run_id)
            if rec is None:
                return None
            if clear_name:
                rec.name = None
            elif name is not None:
                rec.name = name
            if pinned is not None:
                rec.pinned = pinned
            s.flush()
            return _summary(rec)

    def delete(self, run_id: str) -> bool:
        """Remove the run's record; False when there was none."""
        with self.db.session() as s, s.begin():
            return s.execute(delete(RunRecord).where(RunRecord.id == run_id)).rowcount > 0
