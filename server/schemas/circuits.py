"""Schemas of the circuit routes (``docs/methods/circuits.md``): one exact path-patching query and a
circuit (EAP / EAP-IG scores, top edges, faithfulness, exact re-check) for a clean/corrupted text pair.
Pure pydantic; texts, edge counts, steps and re-checks are bounded."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_CIRCUIT_TEXT = 1000
MAX_CIRCUIT_EDGES = 500
MAX_CIRCUIT_CHECK = 100
MAX_IG_STEPS_API = 16
MAX_CURVE_POINTS = 11
MAX_CIRCUIT_PAIRS = 16


class PairText(BaseModel):
    """One posted clean/corrupted pair: the two texts the same number of tokens (positions are patched
    one to one); ``answer``/``wrong`` one token each for the answer metrics."""

    model_config = ConfigDict(extra="forbid", strict=True)

    clean: str = Field(..., min_length=1, max_length=MAX_CIRCUIT_TEXT)
    corrupted: str = Field(..., min_length=1, max_length=MAX_CIRCUIT_TEXT, description="as many tokens as clean")
    answer: str | None = Field(None, min_length=1, max_length=64, description="one token, e.g. ' Paris'")
    wrong: str | None = Field(None, min_length=1, max_length=64, description="one token, e.g. ' Rome'")
    label: str | None = Field(None, max_length=80, description="its name in a job's results (default: pair i)")


class _Answers(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    metric: Literal["answer_logit_diff", "answer_prob", "loss"] = "answer_logit_diff"
    answer: str | None = Field(None, min_length=1, max_length=64, description="one token, e.g. ' Paris'")
    wrong: str | None = Field(None, min_length=1, max_length=64, description="one token, e.g. ' Rome'")


class _Base(_Answers):
    model: str = Field(..., min_length=1, max_length=100, description="a causal LM of GET /api/v1/models")


class _Body(_Base):
    clean: str = Field(..., min_length=1, max_length=MAX_CIRCUIT_TEXT)
    corrupted: str = Field(
        ..., min_length=1, max_length=MAX_CIRCUIT_TEXT, description="the same number of tokens as clean"
    )


class _CircuitOptions(_Answers):
    """How a circuit is found and checked: the method, the circuit's size, the re-check, the curve."""

    method: Literal["eap", "eap-ig"] = "eap"
    steps: int = Field(5, ge=1, le=MAX_IG_STEPS_API, description="EAP-IG interpolation steps")
    k: int = Field(50, ge=1, le=MAX_CIRCUIT_EDGES, description="edges kept in the circuit (threshold: edges listed)")
    threshold: float | None = Field(
        None, ge=0, le=1e6, description="instead of k: the circuit is every edge with |score| >= threshold"
    )
    n_check: int = Field(0, ge=0, le=MAX_CIRCUIT_CHECK, description="top edges re-checked by exact patching")
    curve_points: int = Field(5, ge=2, le=MAX_CURVE_POINTS, description="points of the faithfulness curve")


class RunCircuitCreate(_CircuitOptions):
    """``POST /runs/{id}/circuits``: the run's model and text are the clean input."""

    corrupted: str = Field(
        ..., min_length=1, max_length=MAX_CIRCUIT_TEXT, description="the same number of tokens as the run's text"
    )


class CircuitCreate(_CircuitOptions):
    model: str = Field(..., min_length=1, max_length=100, description="a causal LM of GET /api/v1/models")
    task: Literal["capitals", "ioi"] | None = Field(
        None,
        description="instead of texts or pairs: a shipped set kept to the items the model solves (capitals: the "
        "20-country table; ioi: 100 indirect-object pairs, seed 0), its largest group of one token length, at most "
        f"{MAX_CIRCUIT_PAIRS} pairs",
    )
    clean: str | None = Field(None, min_length=1, max_length=MAX_CIRCUIT_TEXT, description="or pairs")
    corrupted: str | None = Field(
        None, min_length=1, max_length=MAX_CIRCUIT_TEXT, description="the same number of tokens as clean"
    )
    pairs: list[PairText] | None = Field(
        None,
        min_length=1,
        max_length=MAX_CIRCUIT_PAIRS,
        description="instead of clean/corrupted: a pair set, one batch (every text the same number of tokens, at "
        "most 512 tokens in all: pairs x tokens); scores and metrics are means over it, pairs the model fails are "
        "refused",
    )
    ablation: Literal["corrupted", "mean"] = Field(
        "corrupted",
        description="edges outside the circuit read their corrupted values or each sender's mean over the pairs "
        "(mean: two pairs at least)",
    )

    @model_validator(mode="after")
    def _one_input(self):
        texts = self.clean is not None or self.corrupted is not None
        if self.task is not None and (texts or self.pairs is not None):
            raise ValueError(f"task {self.task} builds its own pairs: drop clean, corrupted and pairs")
        if self.task is not None:
            return self
        if self.pairs is not None and texts:
            raise ValueError("give clean and corrupted, or pairs, not both")
        if self.pairs is None and (self.clean is None or self.corrupted is None):
            raise ValueError(
                "give clean and corrupted (one pair), pairs (a list of {clean, corrupted}) or a task (capitals, ioi)"
            )
        return self


class CircuitEdge(BaseModel):
    sender: str
    receiver: str
    score: float


class CheckedEdge(BaseModel):
    sender: str
    receiver: str
    score: float
    exact: float = Field(..., description="the exact noising effect M(patched) - M(clean)")


class CurvePoint(BaseModel):
    k: int
    faithfulness: float


class CircuitPublic(BaseModel):
    method: str
    steps: int | None
    n_senders: int
    n_receivers: int
    n_layers: int
    n_heads: int = Field(..., description="query heads per layer")
    n_kv_heads: int = Field(..., description="key/value heads per layer (grouped-query attention: fewer)")
    n_edges: int = Field(..., description="edges of the whole graph (k/v receivers are key/value heads)")
    edges: list[CircuitEdge] = Field(..., description="the kept edges, by decreasing |score| (at most k)")
    n_kept: int = Field(0, description="edges in the circuit (with a threshold it may exceed the k listed)")
    threshold: float | None = None
    m_clean: float
    m_corrupted: float
    m_circuit: float
    n_pairs: int = Field(1, description="pairs of the batch (metrics and scores are means over them)")
    ablation: str = Field("corrupted", description="what edges outside the circuit read: corrupted or mean")
    m_empty: float | None = Field(None, description="the metric with every edge patched (corrupted: m_corrupted)")
    faithfulness: float = Field(..., description="(M(circuit) - M(empty)) / (M(clean) - M(empty))")
    curve: list[CurvePoint]
    check_spearman: float | None
    check: list[CheckedEdge]
    task_pairs: list[PairText] | None = Field(None, description="task: the pairs it measured (the solved items)")


class PathPatchCreate(_Body):
    sender: str = Field(..., max_length=32, description="E, a<layer>.h<head> or m<layer>")
    receiver: str = Field(
        ..., max_length=32, description="a<layer>.h<head><q|k|v>, a<layer>.g<kv head><k|v>, m<layer> or logits"
    )
    direction: Literal["noising", "denoising"] = "noising"


class PathPatchPublic(BaseModel):
    sender: str
    receiver: str = Field(..., description="the receiver as the graph names it (k/v: the key/value head)")
    direction: str
    effect: float = Field(..., description="M(patched) - M(base)")
    eap: float = Field(..., description="the EAP score of the edge (its first-order estimate)")
    m_clean: float
    m_corrupted: float
