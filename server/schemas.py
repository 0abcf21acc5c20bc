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


# --- faithfulness (ERASER metrics of explainers' token scores) -----------------------------------

FAITHFULNESS_CONVENTIONS = ("eraser", "eraser-paper", "ferret")


class FaithfulnessCreate(BaseModel):
    """Body of ``POST /runs/{id}/faithfulness``: which explainers, which metrics, which convention."""

    explainers: list[str] = Field(
        default_factory=lambda: ["attention", "rollout", "attn_grad", "integrated_gradients", "random"],
        min_length=1, description="explainer names (GET /faithfulness/explainers)")
    metrics: list[str] = Field(
        default_factory=lambda: ["comprehensiveness", "sufficiency", "aopc_comprehensiveness",
                                 "aopc_sufficiency", "token_f1", "iou_f1", "auprc"], min_length=1)
    convention: Literal["eraser", "eraser-paper", "ferret"] = "eraser"
    removal: Literal["delete", "mask"] | None = Field(None, description="override the convention's removal")
    k: float = Field(0.2, gt=0, le=1, description="hard-rationale size, fraction of non-special tokens")
    target: int | None = Field(None, ge=0, description="class to explain and score under the ferret "
                               "convention; the ERASER conventions always use the predicted class")
    human_rationale: list[int] | None = Field(
        None, description="0/1 per token of the run (same length as its tokens) for plausibility")
    human_spans: list[tuple[int, int]] | None = Field(
        None, description="human rationale as [start, end) character spans of the run's text "
        "(alternative to human_rationale; a token is marked when it overlaps a span)")
    options: dict[str, dict] = Field(default_factory=dict,
                                     description='per-explainer options, e.g. {"attention": {"layer": 5, "row": "mean"}}')


class ExplainerResult(BaseModel):
    name: str
    scores: list[float]
    seconds: float
    rationale: list[int] = Field(default_factory=list, description="positions of the top-k hard rationale")
    comprehensiveness: float | None = None
    sufficiency: float | None = None
    aopc_comprehensiveness: float | None = None
    aopc_sufficiency: float | None = None
    comp_curve: list[float | None] | None = None
    suff_curve: list[float | None] | None = None
    token_f1: float | None = None
    iou_f1: float | None = None
    auprc: float | None = None


class FaithfulnessPublic(BaseModel):
    run_id: str
    model: str
    tokens: list[str]
    special: list[int]
    labels: list[str]
    probs: list[float]
    target: int
    convention: str
    removal: str
    k: float
    bins: list[float]
    metrics: list[str]
    human_rationale: list[int] | None = None
    explainers: list[ExplainerResult]


class ExplainerInfo(BaseModel):
    name: str
    description: str
