"""Schemas of the structure analyses (shift, heads, evolution, rollout/flow)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


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
    heads: list[dict] = Field(
        ...,
        description="one record per head: label, labels, scores (causal LMs add 'sink'), distance, and "
        "kv_head (the key/value head it reads)",
    )
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
    through_layer: int | None = Field(None, description="the last layer included (0-based)")
