"""Schemas of the compare resource: two runs, head by head."""

from __future__ import annotations

from pydantic import BaseModel, Field


class HeadComparisonPublic(BaseModel):
    """Run A against run B, per head ``[layer][head]`` (means over query rows)."""

    a: str = Field(..., description="run id of A")
    b: str = Field(..., description="run id of B")
    model_a: str
    model_b: str
    tokens_a: list[str]
    tokens_b: list[str]
    shape: list[int] = Field(..., description="[layer, head, query, key] of both runs")
    js: list[list[float]] = Field(
        ..., description="[layer][head] Jensen-Shannon divergence (bits, 0..1) between A's and B's rows, mean over rows"
    )
    tv: list[list[float]] = Field(..., description="[layer][head] total variation between the rows, mean over rows")
    max_abs_diff: list[list[float]] = Field(..., description="[layer][head] largest |A - B| of one cell")
    positions_a: list[int] | None = Field(
        None, description="with align: the positions of A compared (paired one for one with positions_b)"
    )
    positions_b: list[int] | None = Field(None, description="with align: the positions of B paired with positions_a")
