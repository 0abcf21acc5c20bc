"""Schemas of what heads write (``docs/methods/direct-logit-attribution.md``): the logit lens of a run
(layer x position grid over a bounded range of positions) and the direct logit attribution of one
prediction into the embedding, heads, MLPs and biases, with chosen heads split over source
positions. Pure pydantic; every list and count is bounded."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from attnscope.server.schemas.core import RANGE_PATTERN

MAX_LENS_K = 50
MAX_LENS_POSITIONS = 64
MAX_SPLIT_HEADS = 64
MAX_ANSWER_CHARS = 64

HeadRef = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]
Answer = Annotated[str, Field(min_length=1, max_length=MAX_ANSWER_CHARS)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON types as the schema says: false is no 0


class LensCreate(_Body):
    positions: str | None = Field(
        None,
        pattern=RANGE_PATTERN,
        description=f"positions 'start:stop' (half-open, at most {MAX_LENS_POSITIONS}); default the last position",
    )
    k: int | None = Field(
        None, ge=1, le=MAX_LENS_K, description="top tokens per cell, default 5 (a classifier: its classes, default all)"
    )
    target: Answer | None = Field(
        None,
        description="a token whose probability and rank are read in every cell (exactly one token, "
        "e.g. ' Paris'); default, at each position, the model's own next token there (its last layer's top "
        "token), read at every layer. A classifier: a class label (e.g. 'positive'); default its prediction",
    )


class TokenProb(BaseModel):
    token_id: int
    token: str = Field(..., description="readable label of the token")
    prob: float


class LensCell(BaseModel):
    top: list[TokenProb] = Field(..., description="the k most probable tokens, most probable first")
    target_prob: float
    target_rank: int = Field(
        ..., description="0: the target is the top token; else how many tokens have a larger logit"
    )
    entropy: float = Field(..., description="nats")


class LensPublic(BaseModel):
    run_id: str
    readout: Literal["token", "class"] = Field(
        "token",
        description="token: the logit lens of a causal LM; class: a classifier's class lens (one column, the "
        "classifier head reading each layer's pooled stream; top and target are classes)",
    )
    pooled: list[int] | None = Field(None, description="class lens: the positions the classifier pools")
    layers: int = Field(..., description="blocks + 1: row 0 reads the embedding, the last row the model's own output")
    positions: list[int] = Field(..., description="the positions read (class lens: the first pooled position)")
    tokens: list[str] = Field(..., description="the token at each position")
    target_id: int | None = Field(None, description="the target token, when one was asked")
    target: str | None = None
    cells: list[list[LensCell]] = Field(..., description="[layer][position index]")
    first_top_layer: list[int | None] = Field(
        ...,
        description="per position: the first layer from which the target (or the last layer's top token) is the "
        "top token at every later layer; None when it never is",
    )


class AttributionCreate(_Body):
    position: int | None = Field(
        None, ge=0, description="the position whose next-token logits are read; default last (classifiers: leave out)"
    )
    target: Answer | None = Field(
        None,
        description="one token; default the model's own top next token there. A classifier: a class label; "
        "default its prediction",
    )
    contrast: Answer | None = Field(
        None, description="one token (a classifier: a class label): attribute logit(target) - logit(contrast)"
    )
    split_heads: list[HeadRef] | None = Field(
        None,
        max_length=MAX_SPLIT_HEADS,
        description="[[layer, head], ...] to split over source positions; default the heads with the largest |part|",
    )
    top_heads: int = Field(
        8, ge=0, le=MAX_SPLIT_HEADS, description="how many heads to split when split_heads is absent"
    )


class HeadSplit(BaseModel):
    layer: int
    head: int
    part: float = Field(..., description="the head's share of the logit")
    sources: list[float] = Field(..., description="[key] the share each source position sent (sums to part)")


class AttributionPublic(BaseModel):
    run_id: str
    readout: Literal["token", "class"] = Field(
        "token", description="token: a causal LM's next-token logit; class: a classifier's class logit"
    )
    pooled: list[int] | None = Field(
        None, description="class: the positions the classifier pools (the parts are summed over them)"
    )
    position: int = Field(..., description="the position read (class: the first pooled position)")
    target_id: int
    target: str
    contrast_id: int | None = None
    contrast: str | None = None
    logit: float = Field(..., description="logit(target) (- logit(contrast)) as the model computes it")
    embed: float = Field(..., description="the embedding's part")
    heads: list[list[float]] = Field(..., description="[layer][head] each head's part")
    attn_bias: list[float] = Field(..., description="[layer] the attention output bias's part")
    mlp: list[float] = Field(..., description="[layer] each MLP's part")
    bias: float = Field(
        ..., description="the final norm's bias and the unembedding bias (a classifier: also its pooler's bias)"
    )
    norm_bias: list[float] | None = Field(
        None, description="[layer] a post-norm block's LayerNorm biases read through the later frozen norms"
    )
    scale: float = Field(
        ..., description="the final norm's scale, frozen at its clean value (post-norm: the last block's last norm)"
    )
    residual_error: float = Field(..., description="logit minus the sum of the parts (float rounding)")
    tokens: list[str] = Field(..., description="the source tokens 0..position (a classifier: every token)")
    splits: list[HeadSplit]


class ValueWeightedPublic(BaseModel):
    run_id: str
    value_weighted_run_id: str = Field(
        ...,
        description="a run whose maps are the value-weighted maps of this run (rows normalised to sum to 1): "
        "read it with every map route (attention slices, rows, heads, structure)",
    )
    shape: list[int] = Field(..., description="[layer, head, query, key]")


MAX_GRAPH_NODES = 10_000


class GraphCreate(_Body):
    position: int | None = Field(None, ge=0, description="the position whose prediction is explained; default last")
    threshold: float = Field(
        0.04, ge=0.0, le=1.0, description="keep an edge whose importance (share of its node, 0..1) is at least this"
    )
    max_nodes: int = Field(
        2000, ge=1, le=MAX_GRAPH_NODES, description="refuse (422) a graph past this many nodes: raise the threshold"
    )
    target: Answer | None = Field(
        None, description="one token whose logit's direct parts are reported; default the model's own next token"
    )


class GraphNode(BaseModel):
    kind: str = Field(
        ...,
        description="'pre': the stream entering block 'layer' (layer = blocks: the final stream); "
        "'mid': after the block's attention",
    )
    layer: int
    position: int
    token: str


class GraphEdge(BaseModel):
    source: int = Field(..., description="index into nodes")
    target: int = Field(..., description="index into nodes")
    kind: str = Field(..., description="attention | residual | mlp")
    weight: float = Field(..., description="the edge's importance: its share of the target node (Ferrando and Voita)")
    heads: list[float] | None = Field(None, description="[head] each head's share of an attention edge")


class GraphPublic(BaseModel):
    run_id: str
    position: int
    threshold: float
    max_nodes: int
    target_id: int
    target: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    logit: float = Field(..., description="logit(target) at the position")
    bias: float = Field(..., description="the final norm's bias and unembedding bias term (not a block's write)")
    embed: float = Field(..., description="the embedding's direct part of the logit")
    attention: list[float] = Field(..., description="[layer] each block's attention direct part (heads + b_O)")
    mlp: list[float] = Field(..., description="[layer] each MLP's direct part; embed + attention + mlp = logit - bias")
