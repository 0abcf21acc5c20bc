"""Request and response schemas of the REST API (pure pydantic: the dashboard imports this too)."""

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
    text: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="the text to analyse",
                             examples=["The cat sat on the mat because it was tired."])
    sample: SampleRef | None = Field(None, description="a dataset sample, for vision models")

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("text is empty or only whitespace; send at least one word")
        return v

    @model_validator(mode="after")
    def _one_input(self) -> "RunCreate":
        if (self.text is None) == (self.sample is None):
            raise ValueError("send exactly one input: 'text' (text models) or 'sample' "
                             "({\"dataset\": \"mnist\", \"index\": 17}, vision models)")
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


class JobCreate(BaseModel):
    """Body of ``POST /jobs``: a registered job kind and its parameters."""

    kind: str = Field(..., description="job kind, e.g. census or faithfulness (see GET /jobs/kinds)")
    params: dict = Field(default_factory=dict, description="parameters of that kind")


class JobPublic(BaseModel):
    id: str
    kind: str
    params: dict
    status: Literal["queued", "running", "done", "failed", "cancelled"]
    progress: float = Field(..., ge=0, le=1)
    done: int
    total: int
    message: str = ""
    error: str | None = None
    created: float
    started: float | None = None
    finished: float | None = None
    result_formats: list[str] = Field(default_factory=list, description="formats of GET /jobs/{id}/result")


class JobKindPublic(BaseModel):
    name: str
    description: str
    params_schema: dict


# ----------------------------------------------------------------------------- structure analyses
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
    heads: list[dict] = Field(..., description="one record per head: label, labels, scores, distance")
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
# ---------------------------------------------------------------- measure-theoretic view (methods.md 3)
BOUND_STATUS = (
    "DERIVED (our own derivation, not the paper's theorem; methods.md 3.3 corrected for biases). "
    "Assumptions: token measures supported in the ball B_R (R measured on the data: the largest token "
    "norm), W1 with the Euclidean cost, the map Phi(mu) = (F_mu)#mu with F_mu the attention sublayer "
    "(all heads, Q/K/V biases, W_O and its bias, residual only if asked; no LayerNorm)."
)


class MeasurePublic(BaseModel):
    """W1 profile of a run's token measures and the maximum-entropy check of its attention."""

    run_id: str
    model: str
    n_tokens: int
    w1_successive: list[float] = Field(..., description="[layer]: W1(mu_l, mu_{l+1}) between successive hidden states")
    max_entropy_deviation: list[float] | None = Field(
        None, description="[layer]: max |p - attention| with p the maximum-entropy row solved anew from the scores")
    max_entropy_note: str = ""
    compare_run_id: str | None = None
    w1_between: list[float] | None = Field(
        None, description="[layer + 1]: W1 between this run's and the compared run's token measures at each depth")


class LipschitzPublic(BaseModel):
    """DERIVED upper bound and empirical estimate of one attention layer's W1-Lipschitz constant."""

    model: str
    layer: int
    n_tokens: int
    radius: float = Field(..., description="R: the largest token norm of the layer's input")
    residual: bool
    log10_bound: float = Field(..., description="log10 L (L itself overflows float64 for real layers)")
    log10_bound_per_head: list[float]
    log10_bound_without_bias: float = Field(
        ..., description="methods.md 3.3 as written (query bias ignored): not valid when the layer has one")
    estimate: float = Field(..., description="L_hat: the largest W1 ratio found (a lower bound on the true L)")
    log10_estimate: float
    log10_ratio: float = Field(..., description="log10(L_hat / L); must be <= 0")
    best_random: float
    best_ascent: float
    n_evaluations: int
    seconds: float
    bound_status: str = BOUND_STATUS


class ParticlesPublic(BaseModel):
    """Tokens as particles: every depth's hidden states projected by ONE PCA fitted on all depths."""

    run_id: str
    model: str
    tokens: list[str]
    dims: int
    depth_labels: list[str] = Field(..., description="[layer + 1]: 'embeddings', 'after layer 0', ...")
    coords: list = Field(..., description="[layer + 1][token][dims]")
    explained_variance: list[float]
    w1_successive: list[float]


class FixedPointPublic(BaseModel):
    """A block iterated past its trained depth: W1 between successive iterates."""

    run_id: str
    model: str
    block: str
    demonstration: bool
    trained_depth: int
    start_depth: int
    n_steps: int
    w1_steps: list[float] = Field(..., description="[step]: W1(mu_{t+1}, mu_t)")
    rate: float | None = Field(None, description="median ratio of successive W1 over the second half (None if undefined)")
    converged: bool
    orbit_radius: float
    log10_bound_attention: float | None = Field(
        None, description="DERIVED bound of the block's attention sublayer with residual on the orbit's ball")
    attention_contraction: bool | None = Field(
        None, description="log10_bound_attention < 0: the contraction condition for the attention sublayer; "
        "the block's FFN and LayerNorms are not bounded")
class ConvAttentionPair(BaseModel):
    """One output channel of a conv-as-attention run's first layer, computed both ways ``[row, col]``."""

    run_id: str
    channel: int
    n_channels: int
    grid: list[int]
    conv: list[list[float]]
    attention: list[list[float]]
    max_abs_diff: float = Field(..., description="largest |conv - attention| over all channels and positions")
# --- faithfulness (ERASER metrics of explainers' token scores) -----------------------------------

FAITHFULNESS_CONVENTIONS = ("eraser", "eraser-paper", "ferret")


class FaithfulnessCreate(BaseModel):
    """Body of ``POST /runs/{id}/faithfulness``: which explainers, which metrics, which convention."""

    explainers: list[str] = Field(
        default_factory=lambda: ["attention", "rollout", "attn_grad", "integrated_gradients", "random"],
        min_length=1, description="explainer names (GET /faithfulness/explainers)")
    metrics: list[str] = Field(
        default_factory=lambda: ["comprehensiveness", "sufficiency", "aopc_comprehensiveness",
                                 "aopc_sufficiency", "token_f1", "iou_f1", "auprc"], min_length=1)
    convention: Literal["eraser", "eraser-paper", "ferret"] = "eraser"
    removal: Literal["delete", "mask"] | None = Field(None, description="override the convention's removal")
    k: float = Field(0.2, gt=0, le=1, description="hard-rationale size, fraction of non-special tokens")
    target: int | None = Field(None, ge=0, description="class to explain and score under the ferret "
                               "convention; the ERASER conventions always use the predicted class")
    human_rationale: list[int] | None = Field(
        None, description="0/1 per token of the run (same length as its tokens) for plausibility")
    human_spans: list[tuple[int, int]] | None = Field(
        None, description="human rationale as [start, end) character spans of the run's text "
        "(alternative to human_rationale; a token is marked when it overlaps a span)")
    options: dict[str, dict] = Field(default_factory=dict,
                                     description='per-explainer options, e.g. {"attention": {"layer": 5, "row": "mean"}}')


class ExplainerResult(BaseModel):
    name: str
    scores: list[float]
    seconds: float
    rationale: list[int] = Field(default_factory=list, description="positions of the top-k hard rationale")
    comprehensiveness: float | None = None
    sufficiency: float | None = None
    aopc_comprehensiveness: float | None = None
    aopc_sufficiency: float | None = None
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
    labels: list[str]
    probs: list[float]
    target: int
    convention: str
    removal: str
    k: float
    bins: list[float]
    metrics: list[str]
    human_rationale: list[int] | None = None
    explainers: list[ExplainerResult]


class ExplainerInfo(BaseModel):
    name: str
    description: str
