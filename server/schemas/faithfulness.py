"""Schemas of faithfulness (ERASER metrics of explainers' token scores)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, JsonValue

FAITHFULNESS_CONVENTIONS = ("eraser", "eraser-paper", "ferret")
DEFAULT_EXPLAINERS = ("attention", "rollout", "attn_grad", "integrated_gradients", "random")
DEFAULT_METRICS = (
    "comprehensiveness",
    "sufficiency",
    "aopc_comprehensiveness",
    "aopc_sufficiency",
    "token_f1",
    "iou_f1",
    "auprc",
)
COUNT_DESCRIPTION = (
    "override the convention's counting rule for k% of the tokens: eraser-code (remove n - int((1-k) n), keep "
    "int(k n), as ERASER's code; the eraser conventions' default), ceil (both ceil(k n)), ferret (both int(k n), "
    "0 skips the bin; the ferret convention's default)"
)


class FaithfulnessCreate(BaseModel):
    """Body of ``POST /runs/{id}/faithfulness``: which explainers, which metrics, which convention."""

    explainers: list[str] = Field(
        default_factory=lambda: list(DEFAULT_EXPLAINERS),
        min_length=1,
        description="explainer names (GET /faithfulness/explainers)",
    )
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS), min_length=1)
    convention: Literal["eraser", "eraser-paper", "ferret"] = "eraser"
    removal: Literal["delete", "mask"] | None = Field(None, description="override the convention's removal")
    count: Literal["eraser-code", "ceil", "ferret"] | None = Field(None, description=COUNT_DESCRIPTION)
    k: float = Field(0.2, gt=0, le=1, description="hard-rationale size, fraction of non-special tokens")
    target: int | None = Field(
        None,
        ge=0,
        description="class to explain and score under the ferret "
        "convention (causal LMs: a vocabulary id); the ERASER conventions always use the predicted class",
    )
    position: int | None = Field(
        None,
        ge=0,
        description="causal LMs: explain the prediction of the token after this position of the run (prompt "
        "and generated tokens; default: the last position)",
    )
    human_rationale: list[int] | None = Field(
        None, description="0/1 per token of the run (same length as its tokens) for plausibility"
    )
    human_spans: list[tuple[int, int]] | None = Field(
        None,
        description="human rationale as [start, end) character spans of the run's text "
        "(alternative to human_rationale; a token is marked when it overlaps a span)",
    )
    options: dict[str, dict[str, JsonValue]] = Field(
        default_factory=dict, description='per-explainer options, e.g. {"attention": {"layer": 5, "row": "mean"}}'
    )


class ExplainerScores(BaseModel):
    name: str
    scores: list[float]
    seconds: float
    rationale: list[int] = Field(default_factory=list, description="positions of the top-k hard rationale")
    comprehensiveness: float | None = None
    sufficiency: float | None = None
    aopc_comprehensiveness: float | None = None
    aopc_sufficiency: float | None = None
    comprehensiveness_entropy: float | None = Field(None, description="H(p(x)) - H(p(x without r)), nats (ERASER code)")
    comprehensiveness_kl: float | None = Field(None, description="KL(p(x without r) || p(x)), nats (ERASER code)")
    sufficiency_entropy: float | None = Field(None, description="H(p(x)) - H(p(r only)), nats (ERASER code)")
    sufficiency_kl: float | None = Field(None, description="KL(p(r only) || p(x)), nats (ERASER code)")
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
    labels: list[str] = Field(..., description="the classes; causal LMs: the 10 most likely next tokens")
    probs: list[float] = Field(..., description="probability of each label")
    label_ids: list[int] | None = Field(None, description="causal LMs: the vocabulary ids of the labels")
    target: int = Field(..., description="the explained class (causal LMs: the vocabulary id of the next token)")
    target_label: str | None = Field(None, description="the explained class or next token, readable")
    position: int | None = Field(None, description="causal LMs: the position whose next token is explained")
    convention: str
    removal: str
    count: str = Field(..., description="the counting rule used (eraser-code, ceil or ferret)")
    k: float
    bins: list[float]
    metrics: list[str]
    human_rationale: list[int] | None = None
    explainers: list[ExplainerScores]


class ExplainerPublic(BaseModel):
    name: str
    description: str
