"""Schemas of why a head attends (``docs/methods/qk-attribution.md``): the query/key view and QK
attribution of one (head, query, key) of a run, and composition scores of a model's heads."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

MAX_QK_PARTS = 64
"""Most query (and key) parts a QK answer lists in its matrix; the rest are summed into ``other``."""
MAX_QK_TERMS = 200


class QKVectors(BaseModel):
    """The head's query and key at the pair, after the position rotation (RoPE), and their product."""

    query: list[float] = Field(..., description="[d_head] the rotated query at the query position")
    key: list[float] = Field(..., description="[d_head] the rotated key at the key position (of kv_head)")
    product: list[float] = Field(..., description="[d_head] query * key by dimension (sums to query . key)")
    score: float = Field(..., description="query . key * scale, the pre-softmax score")
    weight: float = Field(..., description="the attention weight of the pair (softmax over the keys the query sees)")
    softcap: float | None = Field(None, description="the model's logit soft-cap c (Gemma 2), or null")
    logit: float = Field(..., description="the logit the softmax reads: c tanh(score / c) with a soft-cap, else score")


class QKTerm(BaseModel):
    """One term scale * q_c . k_c' of the attribution."""

    query_part: str = Field(..., description="what wrote the query side: emb, L{layer}H{head}, MLP{layer}, bias, ...")
    key_part: str = Field(..., description="what wrote the key side")
    value: float


class QKAttribution(BaseModel):
    """The score split into query-part x key-part terms (exact; norms frozen at their clean scales)."""

    query_parts: list[str] = Field(..., description="row labels of matrix (the largest parts; 'other': the rest)")
    key_parts: list[str] = Field(..., description="column labels of matrix")
    matrix: list[list[float]] = Field(..., description="[query_part][key_part] terms; they sum to score")
    key_totals: dict[str, float] = Field(..., description="every key-side part's share of the score")
    query_totals: dict[str, float] = Field(..., description="every query-side part's share of the score")
    top_terms: list[QKTerm] = Field(..., description="the terms of largest magnitude, largest first")
    top_key_part: str = Field(..., description="the key-side part with the largest share of the score")
    conservation_error: float = Field(..., description="|sum of all terms - score|")
    residual_error: float = Field(..., description="largest |sum of parts - recorded stream| at the two positions")


class QKPublic(BaseModel):
    """The query/key view and QK attribution of one head at one (query, key) pair of a run."""

    run_id: str
    layer: int
    head: int
    kv_head: int = Field(..., description="the key/value head the query head reads (grouped-query attention)")
    query: int
    key: int
    query_token: str
    key_token: str
    scale: float
    view: QKVectors
    attribution: QKAttribution


class CompositionPublic(BaseModel):
    """Composition scores (Elhage et al. 2021) of every pair of heads in different layers, from weights."""

    model: str
    mode: Literal["q", "k", "v"]
    n_layers: int
    n_heads: int
    scores: list[list[list[list[float]]]] = Field(
        ...,
        description="[src_layer][src_head][dst_layer][dst_head] normalised Frobenius norm; 0 unless dst_layer > "
        "src_layer",
    )
    layer_max: list[list[float]] = Field(..., description="[src_layer][dst_layer] the largest score over head pairs")
    baseline_mean: float = Field(..., description="mean score of random Gaussian matrices of the same shapes")
    baseline_std: float
