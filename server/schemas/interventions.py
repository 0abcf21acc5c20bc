"""Schemas of causal tests of heads: one intervention set on a run, and the per-head effect grid
(``docs/methods/interventions.md``). Pure pydantic; every list is bounded."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from attnscope.server.schemas.core import MAX_TEXT_CHARS, Prediction

MAX_ITEMS = 64
MAX_HEADS = 1024
MAX_EDGES = 4096
MAX_POSITIONS = 2048
MAX_ANSWER_CHARS = 64
MAX_PATCH_CELLS = 4096  # layers x positions of one patching sweep (SmolLM2: 30 layers x 136 tokens)

HeadRef = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]
Edge = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]
Metric = Literal["prob", "logit_diff", "flip", "cosine", "loss", "answer_logit_diff"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON types as the schema says: false is no 0


class Ablate(_Body):
    kind: Literal["ablate"] = "ablate"
    heads: list[HeadRef] = Field(..., max_length=MAX_HEADS, description="[[layer, head], ...] zero-based")
    method: Literal["zero", "mean", "uniform"] = Field(
        "zero",
        description="zero: the head's output is 0; mean: its mean output over a reference set (16 SST-2 dev "
        "sentences, or the model's first 16 samples); uniform: its attention is uniform over the keys it may see",
    )


class Knockout(_Body):
    kind: Literal["knockout"] = "knockout"
    layers: list[Annotated[int, Field(ge=0)]] = Field(..., max_length=256, description="layers the edges are cut in")
    edges: list[Edge] = Field(..., max_length=MAX_EDGES, description="[[query, key], ...] positions")
    heads: list[Annotated[int, Field(ge=0)]] | None = Field(None, max_length=256, description="only these heads")


class PatchHeads(_Body):
    kind: Literal["patch_heads"] = "patch_heads"
    heads: list[HeadRef] = Field(..., max_length=MAX_HEADS, description="heads whose outputs come from the source")


class PatchResidual(_Body):
    kind: Literal["patch_residual"] = "patch_residual"
    layer: int = Field(..., ge=0, description="the residual stream after this block")
    positions: list[Annotated[int, Field(ge=0)]] = Field(..., max_length=MAX_POSITIONS)


Item = Annotated[Ablate | Knockout | PatchHeads | PatchResidual, Field(discriminator="kind")]


class _MetricFields(_Body):
    metric: Metric | None = Field(
        None,
        description="classifiers: prob (default), logit_diff, flip; embedding models: cosine; causal LMs: loss "
        "(default) or answer_logit_diff",
    )
    positions: list[Annotated[int, Field(ge=0)]] | None = Field(
        None,
        max_length=MAX_POSITIONS,
        description="causal LMs: positions read (loss: the next-token loss after each, default every position; "
        "answer_logit_diff: default the last position)",
    )
    answers: list[Annotated[str, Field(min_length=1, max_length=MAX_ANSWER_CHARS)]] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="answer_logit_diff: [correct, wrong], each exactly one token of the model (e.g. ' Paris')",
    )
    corrupted: str | None = Field(
        None,
        max_length=MAX_TEXT_CHARS,
        description="patching: the other input, tokenising to as many tokens as the run (position by position)",
    )
    direction: Literal["noising", "denoising"] = Field(
        "noising",
        description="noising: the corrupted input's activations patched into the run; denoising: the run's "
        "activations patched into the corrupted input",
    )


class InterventionCreate(_MetricFields):
    """One intervention set, applied together in one forward pass of the run's input."""

    interventions: list[Item] = Field(..., max_length=MAX_ITEMS, description="applied together")


class InterventionPublic(BaseModel):
    run_id: str
    altered_run_id: str = Field(
        ..., description="the altered forward pass as a run: its maps at GET /runs/{altered_run_id}/attention"
    )
    metric: str
    positions: list[int] | None = None
    answers: list[int] | None = Field(None, description="token ids of the answers")
    effects: dict[str, float] = Field(..., description="metric -> altered minus clean")
    clean: Prediction
    altered: Prediction
    shape: list[int] = Field(..., description="[layer, head, query, key] of the maps")


class HeadEffectsCreate(_MetricFields):
    """One intervention per head, batched."""

    method: Literal["zero", "mean", "uniform", "patch"] = Field(
        "zero", description="ablation per head (zero, mean, uniform) or patching its output from 'corrupted'"
    )
    chunk: int = Field(32, ge=1, le=64, description="copies of the input per batched forward pass")


class RankAgreementPublic(BaseModel):
    rho: float | None = Field(None, description="Spearman rank correlation of |effect| and the importance")
    p: float | None = None
    n: int


class HeadEffect(BaseModel):
    layer: int
    head: int
    effect: float


class HeadEffectsPublic(BaseModel):
    run_id: str
    method: str
    metric: str
    positions: list[int] | None = None
    answers: list[int] | None = None
    effect: list[list[float]] = Field(..., description="[layer][head] metric change (altered - clean)")
    top: list[HeadEffect] = Field(..., description="the heads of largest |effect|")
    clean: Prediction
    importance: list[list[float]] = Field(
        ..., description="[layer][head] attention-based importance: mean over rows of the largest weight"
    )
    importance_kind: Literal["confidence"] = "confidence"
    rank_agreement: RankAgreementPublic
    dla: list[list[float]] | None = Field(
        None,
        description="[layer][head] direct logit attribution of what the metric reads (answer_logit_diff: "
        "logit(correct) - logit(wrong); loss: the true next token's logit), final norm frozen, mean over the metric's "
        "positions; None for classifiers, embeddings, image runs and denoising",
    )
    dla_agreement: RankAgreementPublic | None = Field(
        None,
        description="Spearman rank correlation over the heads of the signed dla with the effect oriented by "
        "dla_against (docs/methods/direct-logit-attribution.md)",
    )
    dla_against: Literal["-effect", "effect"] | None = Field(
        None,
        description="what dla is ranked against: -effect for answer_logit_diff (removing a head's direct part d "
        "changes the difference by -d), effect for loss (it raises the loss by about d (1 - p))",
    )
    seconds: float = Field(..., description="wall time of the grid")


class ResidualPatchingCreate(_MetricFields):
    """The layer x position patching sweep: one residual patch per cell, batched (at most
    ``MAX_PATCH_CELLS`` = layers x tokens cells; more is refused with 413)."""

    corrupted: str = Field(
        ...,
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description="the other input, tokenising to as many tokens as the run (position by position)",
    )
    chunk: int = Field(32, ge=1, le=64, description="copies of the input per batched forward pass")


class ResidualPatchingPublic(BaseModel):
    run_id: str
    metric: str
    direction: str
    positions: list[int] | None = None
    answers: list[int] | None = None
    tokens: list[str] = Field(..., description="the tokens of the patched input, one per column")
    effect: list[list[float]] = Field(
        ...,
        description="[layer][position] metric change (altered - clean) when only the residual stream after "
        "block layer at that position comes from the source",
    )
    full: float = Field(..., description="the change when the whole residual stream comes from the source")
    clean: Prediction
    seconds: float = Field(..., description="wall time of the sweep")
