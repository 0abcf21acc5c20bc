"""Schemas of dataset-level jobs: ``POST /jobs`` and each job kind's ``params``.

The ``*Params`` models hold the shape and the bounds of every parameter (a 422 before a job is
queued); what needs the server's registries (is ``model`` a text model, is ``split`` a split of that
data set, are the explainer and metric names known) is checked by the kind itself
(``attnscope.server.jobs.dataset_kinds``), so this module stays pure pydantic for the dashboard.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationInfo, field_validator, model_validator

from attnscope.server.schemas.circuits import PairText
from attnscope.server.schemas.core import MAX_MODEL_NAME_CHARS
from attnscope.server.schemas.faithfulness import (
    COUNT_DESCRIPTION,
    DEFAULT_EXPLAINERS,
    ExplainerOptions,
    count_fits_removal,
)


class CensusParams(BaseModel):
    """Parameters of the ``census`` job: per-head statistics over a seeded sample of a data set."""

    model_config = ConfigDict(extra="forbid")  # a misspelt parameter is a 422, never silently ignored

    model: str = Field(
        "minilm", min_length=1, max_length=MAX_MODEL_NAME_CHARS, description="registry name of a text model"
    )
    dataset: Literal["sst2", "movies"] = "sst2"
    n: int = Field(200, ge=1, le=5000, description="examples (a seeded sample of the split)")
    split: str | None = Field(
        None,
        description="data set split: sst2 dev|train, movies rationales|fold10 (default: sst2 dev, movies rationales)",
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the example sample (and of the CNN probe)")


class ProbeParams(CensusParams):
    """Parameters of the ``probe`` job: the label predicted from each layer's maps alone."""

    n: int = Field(200, ge=10, le=5000)
    size: int = Field(32, ge=4, le=128, description="maps are cropped/padded to size x size")
    folds: int = Field(5, ge=2, le=10)
    classifier: Literal["logistic", "cnn"] = Field(
        "logistic",
        description="logistic regression on the flattened maps, or a 2-layer CNN with one "
        "input channel per head (the attention-map probe of the heads guide)",
    )


class FaithfulnessParams(BaseModel):
    """Parameters of the ``faithfulness`` job: the explainer x metric table over a data set."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        "minilm-sst2", min_length=1, max_length=MAX_MODEL_NAME_CHARS, description="registry name of a text classifier"
    )
    dataset: Literal["sst2", "movies", "hatexplain"] = "movies"
    split: str | None = Field(
        None, description="sst2: dev|train; movies: rationales|fold10; hatexplain: test|validation"
    )
    explainers: list[str] = Field(default_factory=lambda: list(DEFAULT_EXPLAINERS), min_length=1)
    metrics: list[str] | None = Field(
        None, min_length=1, description="metric names (default: every metric, GET /faithfulness/explainers)"
    )
    n: int = Field(50, ge=1, le=2000, description="first n examples (movies: balanced pos/neg)")
    start: int = Field(0, ge=0, le=100_000, description="index of the first example")
    convention: Literal["eraser", "eraser-paper", "ferret"] = "eraser"
    removal: Literal["delete", "mask"] | None = None
    count: Literal["eraser-code", "eraser-order", "ceil", "ferret"] | None = Field(None, description=COUNT_DESCRIPTION)
    k: float | None = Field(None, gt=0, le=1, description="default: per data set (movies 0.07)")
    max_tokens: int | None = Field(None, ge=8, le=512, description="truncate inputs (default: model limit)")
    allow_offensive: bool = Field(False, validate_default=True, description="explicit opt-in needed for hatexplain")
    options: ExplainerOptions = Field(
        default_factory=ExplainerOptions,
        description="per-explainer options, bounded as in POST /runs/{id}/faithfulness",
    )

    @field_validator("count")
    @classmethod
    def _count_fits_removal(cls, v: str | None, info: ValidationInfo) -> str | None:
        return count_fits_removal(v, info.data.get("removal"))

    @field_validator("allow_offensive")
    @classmethod
    def _opt_in(cls, v: bool, info: ValidationInfo) -> bool:
        if info.data.get("dataset") == "hatexplain" and not v:
            raise ValueError("hatexplain holds hate speech and slurs; set allow_offensive: true to opt in")
        return v


class HeadEffectsParams(BaseModel):
    """Parameters of the ``head-effects`` job: every head ablated in turn on each of N examples."""

    model: str = Field(
        "minilm-sst2", min_length=1, max_length=MAX_MODEL_NAME_CHARS, description="registry name of a text model"
    )
    dataset: Literal["sst2", "movies"] = "sst2"
    n: int = Field(50, ge=1, le=1000, description="examples (a seeded sample of the split)")
    split: str | None = Field(None, description="data set split (default: sst2 dev, movies rationales)")
    seed: int = Field(0, ge=0, description="seed of the example sample")
    method: Literal["zero", "mean", "uniform"] = Field("zero", description="ablation applied to each head in turn")
    metric: Literal["prob", "logit_diff", "flip", "cosine", "loss"] | None = Field(
        None, description="default: the task's first (classifiers prob, embedding models cosine, causal LMs loss)"
    )
    max_tokens: int = Field(64, ge=4, le=128, description="each text is cut to this many tokens")
    chunk: int = Field(32, ge=1, le=64, description="copies of an input per batched forward pass")


class DlaParams(CensusParams):
    """Parameters of the ``dla`` job: direct logit attribution per head averaged over N examples."""

    model: str = Field(
        "smollm2",
        min_length=1,
        max_length=MAX_MODEL_NAME_CHARS,
        description="registry name of a pre-norm causal LM (the attribution reads its final norm and unembedding) "
        "or of a text classifier (its class logit, every norm's scale and the pooler's gain frozen)",
    )
    n: int = Field(100, ge=1, le=2000, description="examples (a seeded sample of the split)")
    max_tokens: int = Field(64, ge=2, le=256, description="each text is cut to this many tokens")
    target: Literal["predicted", "next", "label"] = Field(
        "predicted",
        description="the logit attributed: a causal LM's at the last position, its own top next token or the "
        "text's true next token (next: the text cut to max_tokens + 1 tokens, its last one the target); a "
        "classifier's class logit, its predicted class or the example's gold class (label)",
    )


MAX_JOB_PAIRS = 500
MAX_POSTED_PAIRS = 200
MAX_JOB_TOP_EDGES = 2000


class CircuitParams(BaseModel):
    """Parameters of the ``circuit`` job: EAP or EAP-IG on every pair of a set, each edge's mean score
    over the pairs with its interval, and the circuit's faithfulness per pair."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field("smollm2", min_length=1, max_length=MAX_MODEL_NAME_CHARS, description="a causal LM")
    task: Literal["induction", "pairs", "capitals", "ioi"] = Field(
        "induction",
        description="induction: seeded repeated random tokens (metric loss); pairs: the posted pairs; capitals: the "
        "20-country table, ioi: n seeded indirect-object pairs, each kept to the items the model solves (built at "
        "submit into pairs, their count in generated)",
    )
    n: int = Field(
        20, ge=1, le=MAX_JOB_PAIRS, description="induction pairs (pair i uses seed + i); ioi: items drawn (<= 200)"
    )
    half: int = Field(15, ge=2, le=63, description="induction: tokens per copy (a pair is 1 + 2 half tokens)")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    bos: int | None = Field(
        None, ge=0, le=10_000_000, description="induction: the first token's id (default: the tokenizer's bos)"
    )
    pairs: list[PairText] | None = Field(
        None,
        min_length=1,
        max_length=MAX_POSTED_PAIRS,
        description="task pairs: the clean/corrupted pairs (capitals, ioi: filled at submit with the solved items)",
    )
    generated: int | None = Field(
        None, ge=1, le=MAX_JOB_PAIRS, description="capitals, ioi: items generated before keeping (set at submit)"
    )
    metric: Literal["answer_logit_diff", "answer_prob", "loss"] = Field(
        "answer_logit_diff", description="task pairs: the metric (induction: loss over the second copy)"
    )
    method: Literal["eap", "eap-ig"] = "eap"
    steps: int = Field(5, ge=1, le=16, description="EAP-IG interpolation steps")
    k: int = Field(50, ge=1, le=500, description="edges of each pair's own circuit (when edges is not given)")
    threshold: float | None = Field(
        None,
        ge=0,
        le=1e6,
        description="instead of k: each pair's own circuit is its edges with |score| >= threshold",
    )
    edges: list[str] | None = Field(
        None,
        min_length=1,
        max_length=500,
        description="a fixed circuit measured on every pair: 'sender -> receiver' names (e.g. 'a3.h4 -> a9.h1<k>')",
    )
    ablation: Literal["corrupted", "mean"] = Field(
        "corrupted",
        description="edges outside the circuit read their corrupted values, or each sender's mean output over the "
        "pairs (mean: every pair the same number of tokens)",
    )
    top: int = Field(200, ge=1, le=MAX_JOB_TOP_EDGES, description="edges in the result's table, by |mean score|")
    curve: list[int] = Field(
        default_factory=lambda: [0, 10, 25, 50, 100, 200, 500],
        min_length=1,
        max_length=12,
        description="edge counts of the faithfulness curve (each pair's own ranking)",
    )

    @model_validator(mode="after")
    def _pairs_for_the_task(self):
        if self.pairs is None and self.task == "pairs":
            raise ValueError("task pairs needs pairs: a list of {clean, corrupted, answer, wrong}")
        if self.pairs is not None and self.task == "induction":
            raise ValueError("pairs are read with task pairs; set task to pairs or drop them")
        if self.task == "ioi" and self.n > MAX_POSTED_PAIRS:
            raise ValueError(f"task ioi draws at most {MAX_POSTED_PAIRS} items (n); use n <= {MAX_POSTED_PAIRS}")
        if self.threshold is not None and self.edges is not None:
            raise ValueError("give edges (a fixed circuit) or threshold (each pair's own), not both")
        return self

    @field_validator("edges")
    @classmethod
    def _edge_names(cls, v):
        for e in v or ():
            if e.count("->") != 1 or len(e) > 64:
                raise ValueError(f"edge {e[:64]!r} is not 'sender -> receiver' (e.g. 'a3.h4 -> a9.h1<k>')")
        return v

    @field_validator("curve")
    @classmethod
    def _curve_counts(cls, v):
        if any(not 0 <= k <= 100_000 for k in v):
            raise ValueError("curve edge counts must be in 0..100000")
        return sorted(set(v))

    @property
    def size(self) -> int:
        return len(self.pairs) if self.pairs is not None else self.n


JOB_PARAMS: dict[str, type[BaseModel]] = {
    "census": CensusParams,
    "probe": ProbeParams,
    "faithfulness": FaithfulnessParams,
    "head-effects": HeadEffectsParams,
    "dla": DlaParams,
    "circuit": CircuitParams,
}
"""The ``params`` model of each job kind the API offers, by kind name."""


class JobCreate(BaseModel):
    """Body of ``POST /jobs``: a registered job kind and its parameters."""

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: str = Field(..., description="job kind, e.g. census or faithfulness (see GET /jobs/kinds)")
    params: dict[str, JsonValue] = Field(
        default_factory=dict, description="parameters of that kind (its *Params model, GET /jobs/kinds)"
    )


JobStatus = Literal["queued", "running", "done", "failed", "cancelled", "interrupted"]


class JobPublic(BaseModel):
    """A job as the database holds it; it survives restarts of the API."""

    id: str
    kind: str
    params: dict[str, JsonValue] = Field(..., description="the parameters after defaults (its *Params model)")
    status: JobStatus = Field(
        ...,
        description="queued, running, done, failed, cancelled, or interrupted (the API stopped while it ran: "
        "POST /jobs/{id}/resume continues it from its last saved shard)",
    )
    progress: float = Field(..., ge=0, le=1)
    done: int = Field(..., description="examples finished (saved shards plus the running shards' progress)")
    total: int = Field(..., description="examples the job covers (0 until it starts)")
    shards_done: int = Field(0, description="shards finished and saved in the database (checkpoints)")
    shards_total: int = Field(0, description="shards of examples the job is split into")
    worker: str | None = Field(None, description="what ran it: in-process@host:pid or ray@address")
    message: str = ""
    error: str | None = None
    created: float
    started: float | None = None
    finished: float | None = None
    result_formats: list[str] = Field(default_factory=list, description="formats of GET /jobs/{id}/result")


class JobKindPublic(BaseModel):
    name: str
    description: str
    params_schema: dict[str, JsonValue] = Field(..., description="JSON Schema of the kind's *Params model")
