"""Schemas of models, runs, attention slices, vision samples and errors."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

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


class SampleRef(BaseModel):
    """A dataset sample by index (vision models): ``{"dataset": "mnist", "index": 17}``."""

    dataset: Literal["mnist", "photos"] = Field("mnist", description="dataset name (GET /datasets)")
    index: int = Field(..., ge=0, description="index into the dataset's held-out split")


class RunCreate(BaseModel):
    """Body of ``POST /runs``: which model, and a text (text models) or a dataset sample (vision
    models). Images can also be uploaded with ``POST /runs/image``."""

    model: str = Field("minilm", description="registry name from GET /models", examples=["minilm"])
    text: str | None = Field(
        None,
        max_length=MAX_TEXT_CHARS,
        description="the text to analyse",
        examples=["The cat sat on the mat because it was tired."],
    )
    sample: SampleRef | None = Field(None, description="a dataset sample, for vision models")

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
        return self


class Prediction(BaseModel):
    """The model's own output: an embedding summary or class probabilities."""

    kind: Literal["embedding", "classification"]
    labels: list[str] | None = None
    probs: list[float] | None = None
    predicted: str | None = None
    dim: int | None = None
    embedding: list[float] | None = None


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
    tokens: list[str]
    special: list[int]
    grid: list[int] | None = None
    shape: list[int] = Field(..., description="[layer, head, query, key]")
    prediction: Prediction
    created: float
    image: ImageSource | None = None


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


class ModelStructure(BaseModel):
    """Learned per-head geometry of a model (Gaussian heads: centre and spread), ``layers[layer][head]``."""

    model: str
    kind: str
    grid: list[int]
    layers: list[list[HeadGeometry]]


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


class ConvAttentionPair(BaseModel):
    """One output channel of a conv-as-attention run's first layer, computed both ways ``[row, col]``."""

    run_id: str
    channel: int
    n_channels: int
    grid: list[int]
    conv: list[list[float]]
    attention: list[list[float]]
    max_abs_diff: float = Field(..., description="largest |conv - attention| over all channels and positions")
