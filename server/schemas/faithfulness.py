"""Schemas of faithfulness (ERASER metrics of explainers' token scores)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

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
    "int(k n), as ERASER's code; the eraser conventions' default), eraser-order (the same counts, and the tokens "
    "fed in score order as ERASER's encode_attend.py does: kept ones highest first, remaining ones lowest first; "
    "needs removal delete), ceil (both ceil(k n)), ferret (both int(k n), 0 skips the bin; the ferret "
    "convention's default)"
)


def count_fits_removal(count: str | None, removal: str | None) -> str | None:
    """``eraser-order`` reorders the tokens it feeds, which masking (fixed places) cannot do."""
    if count == "eraser-order" and removal == "mask":
        raise ValueError("count 'eraser-order' feeds the tokens in score order, which needs removal 'delete'")
    return count


# Bounds of the explainers' options (the compute budget, ATTNSCOPE_COMPUTE_BUDGET, bounds their product)
MAX_LAYERS = 64
MAX_HEADS = 256
MAX_IG_STEPS = 256
MAX_IG_BATCH = 256
MAX_FLOW_TOKENS_OPTION = 128
MAX_OCCLUSION_TOKENS = 512
MAX_PERTURBATIONS = 256
MAX_RATIONALE = 8192  # tokens (or spans) of a human rationale


# = attnscope.pipelines.explainers.EXPLAINERS and faithfulness_eval.METRICS (a test keeps them equal; this
# module stays pure pydantic): the schema lists every name, so a misspelt one is a 422 with the choices
ExplainerName = Literal[
    "attention",
    "rollout",
    "flow",
    "attn_grad",
    "integrated_gradients",
    "saliency",
    "input_x_gradient",
    "deeplift",
    "occlusion",
    "random",
]
MetricName = Literal[
    "comprehensiveness",
    "sufficiency",
    "aopc_comprehensiveness",
    "aopc_sufficiency",
    "comprehensiveness_entropy",
    "comprehensiveness_kl",
    "sufficiency_entropy",
    "sufficiency_kl",
    "token_f1",
    "iou_f1",
    "auprc",
]


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class AttentionOptions(_Options):
    layer: int = Field(
        -1, ge=-MAX_LAYERS, le=MAX_LAYERS - 1, description="layer to read (negative: from the last; -1 the last)"
    )
    heads: list[int] | None = Field(
        None,
        min_length=1,
        max_length=MAX_HEADS,
        description="zero-based heads to average (default: all); each must exist in the model",
    )
    row: Literal["cls", "mean"] = Field("cls", description="the readout row, or the mean over every query row")


class NoOptions(_Options):
    """This explainer takes no options."""


class FlowOptions(_Options):
    max_tokens: int = Field(
        64, ge=2, le=MAX_FLOW_TOKENS_OPTION, description="longest input (one max-flow per token pair: ~n^2 solves)"
    )


class IntegratedGradientsOptions(_Options):
    n_steps: int = Field(32, ge=1, le=MAX_IG_STEPS, description="Riemann steps between the baseline and the input")
    internal_batch_size: int | None = Field(
        None,
        ge=1,
        le=MAX_IG_BATCH,
        description="steps per forward pass (default: 4096 // tokens); x tokens must stay <= 16384",
    )


class OcclusionOptions(_Options):
    max_tokens: int | None = Field(
        None, ge=1, le=MAX_OCCLUSION_TOKENS, description="longest input (one forward pass per token; default 128)"
    )
    perturbations_per_eval: int | None = Field(
        None,
        ge=1,
        le=MAX_PERTURBATIONS,
        description="occluded copies per forward pass (default: 4096 // tokens); x tokens must stay <= 16384",
    )


class RandomOptions(_Options):
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the random scores")


class ExplainerOptions(_Options):
    """Per-explainer options; every field typed and bounded (an unknown explainer or option is a 422)."""

    attention: AttentionOptions | None = None
    rollout: NoOptions | None = None
    flow: FlowOptions | None = None
    attn_grad: NoOptions | None = None
    integrated_gradients: IntegratedGradientsOptions | None = None
    deeplift: NoOptions | None = None
    saliency: NoOptions | None = None
    input_x_gradient: NoOptions | None = None
    occlusion: OcclusionOptions | None = None
    random: RandomOptions | None = None

    def as_dict(self) -> dict[str, dict]:
        """``{explainer: {option: value}}`` with only what the request set (the explainers' own defaults
        apply to the rest)."""
        return {
            name: getattr(self, name).model_dump(exclude_unset=True)
            for name in type(self).model_fields
            if getattr(self, name) is not None
        }


class FaithfulnessCreate(BaseModel):
    """Body of ``POST /runs/{id}/faithfulness``: which explainers, which metrics, which convention."""

    model_config = ConfigDict(extra="forbid", strict=True)

    explainers: list[ExplainerName] = Field(
        default_factory=lambda: list(DEFAULT_EXPLAINERS),
        min_length=1,
        max_length=16,
        description="explainer names (GET /faithfulness/explainers)",
    )
    metrics: list[MetricName] = Field(default_factory=lambda: list(DEFAULT_METRICS), min_length=1, max_length=32)
    convention: Literal["eraser", "eraser-paper", "ferret"] = "eraser"
    removal: Literal["delete", "mask"] | None = Field(None, description="override the convention's removal")
    count: Literal["eraser-code", "eraser-order", "ceil", "ferret"] | None = Field(None, description=COUNT_DESCRIPTION)

    @field_validator("count")
    @classmethod
    def _count_fits_removal(cls, v: str | None, info: ValidationInfo) -> str | None:
        return count_fits_removal(v, info.data.get("removal"))

    k: float = Field(0.2, gt=0, le=1, description="hard-rationale size, fraction of non-special tokens")
    target: int | None = Field(
        None,
        ge=0,
        le=2**31 - 1,
        description="class to explain and score under the ferret "
        "convention (causal LMs: a vocabulary id); the ERASER conventions always use the predicted class",
    )
    position: int | None = Field(
        None,
        ge=0,
        le=2**31 - 1,
        description="causal LMs: explain the prediction of the token after this position of the run (prompt "
        "and generated tokens; default: the last position)",
    )
    human_rationale: list[int] | None = Field(
        None,
        max_length=MAX_RATIONALE,
        description="0/1 per token of the run (same length as its tokens) for plausibility",
    )
    human_spans: list[Annotated[list[int], Field(min_length=2, max_length=2)]] | None = Field(
        None,
        max_length=MAX_RATIONALE,
        description="human rationale as [start, end) character spans of the run's text "
        "(alternative to human_rationale; a token is marked when it overlaps a span)",
    )
    options: ExplainerOptions = Field(
        default_factory=ExplainerOptions,
        description='per-explainer options, e.g. {"attention": {"layer": 5, "row": "mean"}}; the request\'s cost '
        "(tokens x steps x explainers) must fit the server's compute budget (413 otherwise)",
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
    count: str = Field(..., description="the counting rule used (eraser-code, eraser-order, ceil or ferret)")
    k: float
    bins: list[float]
    metrics: list[str]
    human_rationale: list[int] | None = None
    explainers: list[ExplainerScores]


class ExplainerPublic(BaseModel):
    name: str
    description: str
