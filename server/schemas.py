"""Request and response schemas of the REST API (pure pydantic: the dashboard imports this too)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

MAX_TEXT_CHARS = 100_000


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    device: str
    loaded_models: list[str]
    runs_stored: int


class ModelPublic(BaseModel):
    name: str
    family: str
    modality: Literal["text", "vision"]
    source: str
    task: str
    description: str = ""
    paper: str = ""
    max_tokens: int
    default: bool = False
    accuracy: float | None = None
    params: int | None = None


class ModelList(BaseModel):
    default: str
    models: list[ModelPublic]


class RunCreate(BaseModel):
    """Body of ``POST /runs``: which model, which text."""

    model: str = Field("minilm", description="registry name from GET /models", examples=["minilm"])
    text: str = Field(..., max_length=MAX_TEXT_CHARS, description="the text to analyse",
                      examples=["The cat sat on the mat because it was tired."])

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("text is empty or only whitespace; send at least one word")
        return v


class Prediction(BaseModel):
    """The model's own output: an embedding summary or class probabilities."""

    kind: Literal["embedding", "classification"]
    labels: list[str] | None = None
    probs: list[float] | None = None
    predicted: str | None = None
    dim: int | None = None
    embedding: list[float] | None = None


class RunPublic(BaseModel):
    id: str
    model: str
    text: str
    tokens: list[str]
    special: list[int]
    grid: list[int] | None = None
    shape: list[int] = Field(..., description="[layer, head, query, key]")
    prediction: Prediction
    created: float


class AttentionSlice(BaseModel):
    """One head ``[query, key]`` or one layer ``[head, query, key]`` as nested lists."""

    run_id: str
    layer: int
    head: int | None = None
    shape: list[int]
    tokens: list[str]
    weights: list


class ErrorBody(BaseModel):
    detail: str


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


# ----------------------------------------------------------------------------- structure analyses
class ShiftResult(BaseModel):
    """Shift scan and implied convolution of every head. Arrays are ``[layer][head]...``."""

    run_id: str
    offsets: list = Field(..., description="offsets key - query: ints (1D) or [drow, dcol] (2D)")
    kernel_shape: list[int]
    threshold: float
    mass: list = Field(..., description="[layer][head][offset] mean mass at each offset")
    best_offset: list = Field(..., description="[layer][head] best offset")
    best_mass: list
    runner_up_offset: list
    runner_up_mass: list
    shift_score: list = Field(..., description="[layer][head] best_mass - runner_up_mass")
    is_shift: list
    kernel: list = Field(..., description="[layer][head][*kernel_shape] implied convolution kernel")
    r2: list = Field(..., description="[layer][head] share of the map explained by the shift basis")
    shift_heads: list[dict]


class HeadsResult(BaseModel):
    run_id: str
    heads: list[dict] = Field(..., description="one record per head: label, labels, scores, distance")
    distance_per_layer: list[float]
    distance_unit: str
    probe: str | None = Field(None, description="how duplicate/induction scores were measured, if they were")


class EvolutionProfile(BaseModel):
    model: str
    layer_entropy: list[float]
    layer_norm_entropy: list[float]
    layer_top1: list[float]
    head_entropy: list
    head_norm_entropy: list
    head_effective_keys: list
    head_top1: list
    slope: float
    js_next: list[float] = Field(..., description="[layer - 1] JS divergence of consecutive layers")
    cosine_next: list[float]


class EvolutionResult(BaseModel):
    run_id: str
    profile: EvolutionProfile
    compare: EvolutionProfile | None = None
    compare_run_id: str | None = None
    match_layer: list[int] | None = None
    js_between: list[float] | None = None
    cosine_between: list[float] | None = None


class ImportanceResult(BaseModel):
    run_id: str
    method: Literal["rollout", "flow"]
    row: int | None = Field(None, description="output position explained (None: mean over rows)")
    tokens: list[str]
    values: list[float]
    grid: list | None = None
    max_tokens: int | None = None
