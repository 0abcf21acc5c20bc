"""Which effect metric a model's task allows, and the clean-vs-altered comparison of ``Outputs``.

``MetricSpec(kind, positions, answers)``: classifiers ``prob`` (default), ``logit_diff``, ``flip``;
embedding models ``cosine``; causal LMs ``loss`` (default; the next-token loss at ``positions``,
default every position that has a next token) and ``answer_logit_diff`` (``answers``: two token ids,
read at ``positions``, default the last position). A metric that does not fit the task is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.analysis import interventions as m
from attnscope.pipelines.interventions.runner import Outputs
from attnscope.pipelines.interventions.spec import InterventionError

TASK_METRICS = {"classification": m.CLASSIFIER_METRICS, "embedding": m.EMBEDDING_METRICS, "causal-lm": m.CAUSAL_METRICS}


@dataclass(frozen=True)
class MetricSpec:
    kind: str | None = None
    positions: tuple[int, ...] | None = None
    answers: tuple[int, int] | None = None


def task_of(backend) -> str:
    if backend.spec.task == "causal-lm":
        return "causal-lm"
    return "classification" if backend.spec.task == "classification" or backend.labels else "embedding"


def resolve(backend, spec: MetricSpec, n_tokens: int, token_ids) -> MetricSpec:
    """The spec with its defaults filled in, or an ``InterventionError`` saying what fits."""
    task = task_of(backend)
    allowed = TASK_METRICS[task]
    kind = spec.kind or allowed[0]
    if kind not in allowed:
        raise InterventionError(
            f"metric {kind!r} does not fit model {backend.spec.name!r} (a {task} model); "
            f"use one of {', '.join(allowed)}"
        )
    if task != "causal-lm":
        if spec.positions or spec.answers:
            raise InterventionError("positions and answers are for causal LMs (metrics loss, answer_logit_diff)")
        return MetricSpec(kind)
    if kind == "answer_logit_diff" and spec.answers is None:
        raise InterventionError("metric answer_logit_diff needs two answer tokens (answers: [correct, wrong])")
    if kind == "loss" and spec.answers is not None:
        raise InterventionError("answers go with metric answer_logit_diff; metric loss reads the actual next tokens")
    last = n_tokens - 1
    positions = spec.positions
    if positions is None:
        positions = tuple(range(last)) if kind == "loss" else (last,)
    if not positions:
        raise InterventionError("positions is empty; give at least one position")
    for p in positions:
        hi = last - 1 if kind == "loss" else last
        if not 0 <= p <= hi:
            what = "a position with a next token" if kind == "loss" else "a position"
            raise InterventionError(f"position {p} is out of range: the input has {n_tokens} tokens, {what} is 0..{hi}")
    return MetricSpec(kind, tuple(int(p) for p in positions), spec.answers)


def targets_of(spec: MetricSpec, token_ids) -> tuple[int, ...] | None:
    """The next-token ids the loss reads at ``spec.positions``."""
    if spec.kind != "loss":
        return None
    return tuple(int(token_ids[p + 1]) for p in spec.positions)


def effect(spec: MetricSpec, clean: Outputs, altered: Outputs) -> np.ndarray:
    """``[B]`` the metric's change for every altered row against the clean row 0."""
    if spec.kind == "prob":
        return m.prob_change(clean.logits[0], altered.logits)
    if spec.kind == "logit_diff":
        return m.logit_diff_change(clean.logits[0], altered.logits)
    if spec.kind == "flip":
        return m.flips(clean.logits[0], altered.logits)
    if spec.kind == "cosine":
        return m.cosine_distance(clean.embedding[0], altered.embedding)
    if spec.kind == "loss":
        return m.loss_change(clean.target_logprob[0], altered.target_logprob)
    return m.answer_diff_change(clean.answer_logits[0], altered.answer_logits)


def all_effects(spec: MetricSpec, clean: Outputs, altered: Outputs) -> dict[str, float]:
    """Every metric the task allows, for altered row 0 (what one intervention reports)."""
    out: dict[str, float] = {}
    if clean.logits is not None:
        for kind in m.CLASSIFIER_METRICS:
            out[kind] = float(effect(MetricSpec(kind), clean, altered)[0])
    elif clean.embedding is not None:
        out["cosine"] = float(effect(MetricSpec("cosine"), clean, altered)[0])
    else:
        out[spec.kind] = float(effect(spec, clean, altered)[0])
    return out
