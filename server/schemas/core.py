"""Schemas of models, runs, attention slices, vision samples and errors."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_TEXT_CHARS = 100_000
MAX_MODEL_NAME_CHARS = 1024  # a registry name or local:<folder> (a path); longer is no model
MAX_NEW_TOKENS = 256  # = attnscope.models.backends.generation.MAX_NEW_TOKENS (this module stays pure pydantic)
MAX_TEMPERATURE = 10.0


class HealthPublic(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    device: str
    loaded_models: list[str]
    runs_stored: int
    runs_bytes: int = Field(
        ..., description="bytes the runs kept in memory hold (maps or their queries/keys, hidden states, outputs)"
    )
    runs_max_bytes: int = Field(
        ...,
        description="the cap on runs_bytes (ATTNSCOPE_MAX_RUN_BYTES); least recently used runs are evicted beyond it",
    )
    heavy_in_flight: int = Field(0, description="heavy requests running or queued on the bounded executor")


class ModelPublic(BaseModel):
    name: str
    family: str
    modality: Literal["text", "vision"]
    source: str
    task: str
    description: str = ""
    paper: str = ""
    max_tokens: int = Field(..., description="longest input a run takes (causal LMs: prompt + generated tokens)")
    default: bool = False
    accuracy: float | None = None
    params: int | None = None
    context: int | None = Field(None, description="causal LMs: the model's own context length")
    kv_heads: int | None = Field(None, description="key/value heads shared by the query heads, when known")


class ModelList(BaseModel):
    default: str
    models: list[ModelPublic]


class SampleRef(BaseModel):
    """A dataset sample by index (vision models): ``{"dataset": "mnist", "index": 17}``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    dataset: Literal["mnist", "photos"] = Field("mnist", description="dataset name (GET /datasets)")
    index: int = Field(..., ge=0, description="index into the dataset's held-out split")


class GenerateCreate(BaseModel):
    """Generation after the prompt (causal LMs): greedy (the default) or sampled at ``temperature``
    with ``seed``. The run's maps then cover prompt + generated tokens."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_new_tokens: int = Field(16, ge=1, le=MAX_NEW_TOKENS, description=f"tokens to generate, 1..{MAX_NEW_TOKENS}")
    greedy: bool | None = Field(
        None, description="take the most likely token at every step (default when no temperature)"
    )
    temperature: float | None = Field(
        None,
        gt=0,
        le=MAX_TEMPERATURE,
        allow_inf_nan=False,
        description=f"sample from softmax(logits / temperature), 0 < t <= {MAX_TEMPERATURE:g}; omit for greedy",
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the sampling (same request, same tokens)")

    @model_validator(mode="after")
    def _greedy_or_temperature(self) -> GenerateCreate:
        if self.greedy and self.temperature is not None:
            raise ValueError("send greedy: true or a temperature (sampling), not both")
        if self.greedy is False and self.temperature is None:
            raise ValueError("greedy: false samples and needs a temperature, e.g. 0.7")
        return self


class RunCreate(BaseModel):
    """Body of ``POST /runs``: which model, and a text (text models) or a dataset sample (vision
    models). Images can also be uploaded with ``POST /runs/image``. Causal LMs also take
    ``generate`` and ``chat``."""

    # exactly one input; the schema says so too (oneOf), so a client sees it before sending
    model_config = ConfigDict(
        extra="forbid",
        strict=True,  # JSON types as the schema says: 0 is no boolean, "3" no integer
        json_schema_extra={
            "oneOf": [
                {"required": ["text"], "properties": {"text": {"type": "string"}, "sample": {"type": "null"}}},
                {
                    "required": ["sample"],
                    "properties": {
                        "sample": {"type": "object"},
                        "text": {"type": "null"},
                        "generate": {"type": "null"},
                        "chat": {"const": False},
                    },
                },
            ]
        },
    )

    model: str = Field(
        "minilm",
        min_length=1,
        max_length=MAX_MODEL_NAME_CHARS,
        description="registry name from GET /models",
        examples=["minilm"],
    )
    text: str | None = Field(
        None,
        max_length=MAX_TEXT_CHARS,
        json_schema_extra={"pattern": r"\S"},  # not blank (the validator below words the error)
        description="the text to analyse",
        examples=["The cat sat on the mat because it was tired."],
    )
    sample: SampleRef | None = Field(None, description="a dataset sample, for vision models")
    generate: GenerateCreate | None = Field(None, description="causal LMs: generate after the text")
    chat: bool = Field(False, description="causal LMs: wrap the text as a user message in the model's chat template")
    thumbnails: bool = Field(
        False,
        description="also compute the run's model-view thumbnails (GET /runs/{run_id}/thumbnails) before "
        "answering: one more pass over every map (seconds on a long lazy run), then read at once",
    )

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("text is empty or only whitespace; send at least one word")
        return v

    @model_validator(mode="after")
    def _one_input(self) -> RunCreate:
        if (self.text is None) == (self.sample is None):
            raise ValueError(
                "send exactly one input: 'text' (text models) or 'sample' "
                '({"dataset": "mnist", "index": 17}, vision models)'
            )
        if self.sample is not None and (self.generate is not None or self.chat):
            raise ValueError("generate and chat apply to texts sent to a causal LM, not to image samples")
        return self


class NextToken(BaseModel):
    """One candidate next token: its id, readable label (visible whitespace), decoded text, probability."""

    token_id: int
    token: str
    text: str
    prob: float


class Prediction(BaseModel):
    """The model's own output: an embedding summary, class probabilities, or (causal LMs) the
    next-token distribution at every position."""

    kind: Literal["embedding", "classification", "next-token"]
    labels: list[str] | None = None
    probs: list[float] | None = None
    predicted: str | None = Field(None, description="predicted class; causal LMs: the top next token after the prompt")
    dim: int | None = None
    embedding: list[float] | None = None
    predicted_id: int | None = None
    predicted_token: str | None = Field(None, description="the predicted token's readable label")
    top_k: list[list[NextToken]] | None = Field(
        None, description="[position][rank]: the most likely next tokens after each position"
    )
    loss: list[float | None] | None = Field(
        None, description="[position] loss (nats) of the token that actually follows; None at the last position"
    )
    mean_loss: float | None = None
    prompt_tokens: int | None = Field(None, description="positions of the prompt (the rest was generated)")
    continuation: str | None = Field(None, description="greedy continuation of the prompt (a few tokens)")


class GenerationStep(BaseModel):
    """One generated token. ``query`` is the position whose attention row chose it (its keys are the
    prompt and the tokens generated before): ``GET /runs/{id}/rows/{query}``."""

    position: int
    query: int
    token_id: int
    token: str
    text: str
    prob: float | None = Field(None, description="the model's probability of this token (temperature 1)")


class GenerationOptions(BaseModel):
    """How a generation was decoded (the request's options after defaults)."""

    max_new_tokens: int
    temperature: float | None = None
    seed: int = 0
    greedy: bool


class Generation(BaseModel):
    text: str
    token_ids: list[int]
    stopped: Literal["eos", "max_new_tokens"]
    options: GenerationOptions
    steps: list[GenerationStep]


class ImageSource(BaseModel):
    """Where a vision run's image came from; the prepared model input is at GET /runs/{id}/image."""

    kind: Literal["sample", "upload"]
    dataset: str | None = None
    index: int | None = None
    label: str | None = None
    sha256: str | None = None
    width: int = Field(..., description="width of the image the model saw")
    height: int


class RunPublic(BaseModel):
    id: str
    model: str
    text: str
    tokens: list[str] = Field(..., description="one readable label per position (whitespace shown as ␣ ↵ ⇥)")
    token_ids: list[int] | None = Field(None, description="the raw token ids (text models)")
    special: list[int]
    grid: list[int] | None = None
    shape: list[int] = Field(..., description="[layer, head, query, key]")
    causal: bool = False
    kv_heads: int | None = Field(None, description="key/value heads (grouped-query attention: fewer than heads)")
    kv_head_of: list[int] | None = Field(None, description="[head] the key/value head each query head reads")
    prediction: Prediction
    created: float
    image: ImageSource | None = None
    chat: bool = False
    generation: Generation | None = None


class AttentionRowsPublic(BaseModel):
    """Every layer's and head's attention row of one query position, ``[layer, head, key]`` (causal
    maps: keys ``0..query``, the prompt and the tokens generated before)."""

    run_id: str
    query: int
    token: str
    shape: list[int]
    tokens: list[str]
    weights: list[list[list[float]]] = Field(..., description="[layer][head][key]")


class DatasetSample(BaseModel):
    index: int
    label: str


class SampleList(BaseModel):
    dataset: str
    split: str
    total: int
    samples: list[DatasetSample]


class HeadGeometry(BaseModel):
    center: list[float] = Field(..., description="mean shift (row, col) in grid units, key - query")
    cov: list[list[float]] = Field(..., description="2x2 covariance (grid units squared)")


class ModelStructurePublic(BaseModel):
    """Learned per-head geometry of a model (Gaussian heads: centre and spread), ``layers[layer][head]``."""

    model: str
    kind: str
    grid: list[int]
    layers: list[list[HeadGeometry]]


MAX_SLICE_BYTES = 16 * 2**20  # one attention slice, counted as float32: 4,194,304 cells (a 2,048 x 2,048 tile)
MAX_STRIDE = 4096  # pooling stride bound (>= the longest run: one cell per axis)
MAX_TOP_K = 256  # keys per row of a top-k slice
RANGE_PATTERN = r"^[0-9]{0,6}:[0-9]{0,6}$"  # "a:b", either end may be left out


class AttentionSlicePublic(BaseModel):
    """One head ``[query, key]`` or one layer ``[head, query, key]`` (of the ``rows`` x ``cols``
    window, pooled by ``stride``) as nested lists."""

    run_id: str
    layer: int
    head: int | None = None
    shape: list[int]
    tokens: list[str]
    weights: list[list[float]] | list[list[list[float]]] = Field(
        ..., description="[query][key] (one head) or [head][query][key] (one layer)"
    )
    rows: list[int] = Field(default_factory=list, description="[start, stop) query positions of the slice")
    cols: list[int] = Field(default_factory=list, description="[start, stop) key positions of the slice")
    stride: int = Field(1, description="each cell pools a stride x stride block of weights")
    pool: Literal["max", "mean"] = "max"


class AttentionTopKPublic(BaseModel):
    """Per query row of the ``rows`` window, the ``k`` keys of ``cols`` with the largest weight,
    largest first: ``indices`` (absolute key positions) and ``weights``, each ``[query, k]`` for one
    head or ``[head, query, k]`` for a layer."""

    run_id: str
    layer: int
    head: int | None = None
    k: int
    shape: list[int]
    rows: list[int]
    cols: list[int]
    tokens: list[str]
    indices: list[list[int]] | list[list[list[int]]] = Field(..., description="[query][k] or [head][query][k]")
    weights: list[list[float]] | list[list[list[float]]] = Field(..., description="[query][k] or [head][query][k]")


class ThumbnailsPublic(BaseModel):
    """The model view's thumbnails of a run: every head's map mean-pooled in ``stride x stride``
    blocks (at most 64 cells a side), and each block of rows' mean weight on each of ``keys`` (the
    first token and the special positions, the keys a view may hide)."""

    run_id: str
    layers: list[int] = Field(..., description="[start, stop) of the layers sent")
    stride: int = Field(..., description="positions per cell and side")
    keys: list[int] = Field(..., description="the key positions of key_means, sorted")
    shape: list[int] = Field(..., description="[layer, head, cells, cells] of means")
    means: list[list[list[list[float]]]] = Field(..., description="[layer][head][row block][key block]")
    key_means: list[list[list[list[float]]]] = Field(..., description="[layer][head][row block][key of keys]")


class ErrorBody(BaseModel):
    """Every error answer of the API (4xx and 5xx, validation included): what went wrong and what to
    change, in one readable string, and a stable machine-readable ``code``."""

    detail: str = Field(..., description="what went wrong and what to change")
    code: str = Field(
        ...,
        description="stable error code: bad_request, bad_host, csrf_header_missing, unauthorized, forbidden, "
        "not_found, method_not_allowed, conflict, too_large, unsupported_media_type, invalid, budget_exceeded, "
        "busy, rate_limited, internal, unavailable",
        examples=["invalid"],
    )


class ConvAttentionPublic(BaseModel):
    """One output channel of a conv-as-attention run's first layer, computed both ways ``[row, col]``."""

    run_id: str
    channel: int
    n_channels: int
    grid: list[int]
    conv: list[list[float]]
    attention: list[list[float]]
    max_abs_diff: float = Field(..., description="largest |conv - attention| over all channels and positions")
