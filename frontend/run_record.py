"""What the dashboard keeps about a run: ``RunRecord``, the one typed record every page reads its
runs through (the session's ``run-store`` and each page's run store hold ``RunRecord.to_store()``).

A ``dcc.Store`` keeps JSON, so the record goes in as a dict and comes back through
``RunRecord.from_store``, which validates it: a store written by an older dashboard (without the
fields added since) still loads when what it lacks has a default, and a garbled or stale one raises
``StaleRunRecord`` with a sentence fit to show; ``load_run`` turns that into "no run" plus the
message, so a bad session never becomes a 500.

The prediction is kept without its per-position arrays (``top_k``, ``loss``: ``[position][rank]``, a
few MB for a 4,096-token causal run) and without the embedding vector: every callback that reads a
store receives it whole, and the browser's session storage is small. The Explore prediction panel
fetches those arrays from ``GET /runs/{id}`` when it draws them.
"""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from attnscope.server.schemas import Generation, ImageSource, Prediction, RunPublic

log = logging.getLogger(__name__)
STALE = "The run kept by this browser tab could not be read ({why}); run the text again."


class StaleRunRecord(ValueError):
    """A store's data is no ``RunRecord`` (written by another version, or garbled)."""


class PredictionSummary(BaseModel):
    """``Prediction`` without its per-position arrays and embedding vector (see the module)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: Literal["embedding", "classification", "next-token"]
    labels: list[str] | None = None
    probs: list[float] | None = None
    predicted: str | None = None
    predicted_id: int | None = None
    predicted_token: str | None = None
    dim: int | None = None
    mean_loss: float | None = None
    prompt_tokens: int | None = None
    continuation: str | None = None

    @classmethod
    def from_prediction(cls, prediction: Prediction) -> PredictionSummary:
        return cls.model_validate(prediction.model_dump(exclude={"top_k", "loss", "embedding"}))


class RunRecord(BaseModel):
    """One run as the dashboard keeps it: ``RunPublic``'s fields, the prediction summarised."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str = Field(..., min_length=1)
    model: str = Field(..., min_length=1)
    text: str = ""
    tokens: list[str]
    token_ids: list[int] | None = None
    special: list[int] = []
    grid: tuple[int, int] | None = None
    shape: tuple[int, int, int, int] = Field(..., description="[layer, head, query, key]")
    causal: bool = False
    kv_heads: int | None = None
    kv_head_of: list[int] | None = None
    created: float = 0.0
    image: ImageSource | None = None
    chat: bool = False
    generation: Generation | None = None
    prediction: PredictionSummary | None = Field(None, description="None: kept by a dashboard before predictions")

    @classmethod
    def from_run(cls, run: RunPublic) -> RunRecord:
        """The record of the API's ``RunPublic``."""
        data = run.model_dump(exclude={"prediction"})
        return cls.model_validate({**data, "prediction": PredictionSummary.from_prediction(run.prediction)})

    def to_store(self) -> dict:
        """A JSON-able dict for a ``dcc.Store``."""
        return self.model_dump(mode="json")

    @classmethod
    def from_store(cls, data) -> RunRecord | None:
        """The record a store holds, ``None`` for an empty store; ``StaleRunRecord`` when ``data`` is
        not one (its message says so in the page's terms)."""
        if data is None or data == {}:
            return None
        if not isinstance(data, dict):
            raise StaleRunRecord(STALE.format(why=f"a {type(data).__name__}, not a run"))
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            fields = sorted({".".join(str(p) for p in e["loc"][:1]) or "?" for e in exc.errors()})
            raise StaleRunRecord(STALE.format(why=f"fields {', '.join(fields)} do not fit")) from exc

    @property
    def n_layers(self) -> int:
        return self.shape[0]

    @property
    def n_heads(self) -> int:
        return self.shape[1]

    @property
    def n_tokens(self) -> int:
        return self.shape[2]


def load_run(data) -> tuple[RunRecord | None, str]:
    """``(record or None, message)``: a stale or garbled store is no run, with a message saying so."""
    try:
        return RunRecord.from_store(data), ""
    except StaleRunRecord as exc:
        log.warning("discarding a stored run: %s", exc)
        return None, str(exc)


def stored_run(data) -> RunRecord | None:
    """The record in ``data``, or ``None`` (empty, stale or garbled: ``load_run`` has the message)."""
    return load_run(data)[0]
