"""Runs in the database: what it takes to compute a run again after a restart (the maps are not kept)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from sqlalchemy import update

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
    ) -> None:
        """Insert the run, or mark it used when it is there already (same id, same content)."""
        now = time.time()
        with self.db.session() as s, s.begin():
            if s.get(RunRecord, run_id) is not None:
                s.execute(update(RunRecord).where(RunRecord.id == run_id).values(last_used=now))
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
