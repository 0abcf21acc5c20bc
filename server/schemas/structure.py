"""Schemas of the structure analyses (shift, heads, evolution, rollout/flow)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

Offset = int | list[int]
"""A key - query offset: an int (1D inputs) or ``[drow, dcol]`` (2D grid inputs)."""

Grid2 = list[list[float]]
"""``[layer][head]`` of floats."""


class ShiftHead(BaseModel):
    """One head's scan result (a row of the shift-heads table)."""

    label: str = Field(..., description="L{layer}H{head}")
    layer: int
    head: int
    offset: Offset
    mass: float
    runner_up: Offset
    runner_up_mass: float
    shift_score: float
    is_shift: bool


class ShiftPublic(BaseModel):
    """Shift scan and implied convolution of every head. Arrays are ``[layer][head]...``."""

    run_id: str
    offsets: list[Offset] = Field(..., description="offsets key - query: ints (1D) or [drow, dcol] (2D)")
    kernel_shape: list[int]
    threshold: float
    mass: list[list[list[float]]] = Field(..., description="[layer][head][offset] mean mass at each offset")
    best_offset: list[list[Offset]] = Field(..., description="[layer][head] best offset")
    best_mass: Grid2
    runner_up_offset: list[list[Offset]]
    runner_up_mass: Grid2
    shift_score: Grid2 = Field(..., description="[layer][head] best_mass - runner_up_mass")
    is_shift: list[list[bool]]
    kernel: list[list[list[float]]] | list[list[list[list[float]]]] = Field(
        ..., description="[layer][head][*kernel_shape] implied convolution kernel (1D or 2D)"
    )
    r2: Grid2 = Field(..., description="[layer][head] share of the map explained by the shift basis")
    shift_heads: list[ShiftHead]


class HeadScores(BaseModel):
    """One head's types and the scores behind them, each in [0, 1]. Scores a model or input does not
    have are left out of the JSON: ``previous``/``next`` on grid inputs, ``sink`` outside causal LMs, ``duplicate``/
    ``induction`` without the repeated-token probe, ``kv_head`` without grouped-query attention."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    head: str = Field(..., description="L{layer}H{head}")
    labels: list[str] = Field(..., description="the types this head passes the threshold of")
    layer: int
    head_index: int
    distance: float = Field(..., description="mean attention distance (see distance_unit)")
    kv_head: int | None = Field(None, description="the key/value head it reads")
    self_: float = Field(..., alias="self", description="mass on the query's own position")
    previous: float | None = None
    next: float | None = None
    shift: float
    cls_sink: float
    sep_sink: float
    sink: float | None = None
    broad: float
    local: float
    duplicate: float | None = None
    induction: float | None = None

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler):
        return {k: v for k, v in handler(self).items() if v is not None}


class HeadsPublic(BaseModel):
    run_id: str
    heads: list[HeadScores] = Field(..., description="one record per head")
    distance_per_layer: list[float]
    distance_unit: str
    probe: str | None = Field(None, description="how duplicate/induction scores were measured, if they were")


class EvolutionProfile(BaseModel):
    model: str
    layer_entropy: list[float]
    layer_norm_entropy: list[float]
    layer_top1: list[float]
    head_entropy: Grid2 = Field(..., description="[layer][head] mean row entropy (nats)")
    head_norm_entropy: Grid2
    head_effective_keys: Grid2
    head_top1: Grid2
    slope: float
    js_next: list[float] = Field(..., description="[layer - 1] JS divergence of consecutive layers")
    cosine_next: list[float]


class EvolutionPublic(BaseModel):
    run_id: str
    profile: EvolutionProfile
    compare: EvolutionProfile | None = None
    compare_run_id: str | None = None
    match_layer: list[int] | None = None
    js_between: list[float] | None = None
    cosine_between: list[float] | None = None


class ImportancePublic(BaseModel):
    run_id: str
    method: Literal["rollout", "flow"]
    row: int | None = Field(None, description="output position explained (None: mean over rows)")
    tokens: list[str]
    values: list[float]
    grid: list[list[float]] | None = Field(None, description="[row][col] importance over an image grid")
    max_tokens: int | None = None
    through_layer: int | None = Field(None, description="the last layer included (0-based)")


class StructurePassPublic(BaseModel):
    """Where the run's shared structure pass stands (the one pass every structure route reads)."""

    run_id: str
    state: Literal["idle", "running", "done", "cancelled"] = Field(
        ...,
        description="idle: none made or kept; running: in flight; done: kept, the routes answer from it; "
        "cancelled: the last one was cancelled and none made since",
    )
    done: int = Field(0, ge=0, description="bands of rows done (running only)")
    total: int = Field(0, ge=0, description="bands of rows in the pass: layers x bands per layer (running only)")
    waiting: int = Field(0, ge=0, description="requests waiting for the pass in flight (running only)")
