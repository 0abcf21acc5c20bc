"""Explain one run's prediction and score the explanations: what ``POST /runs/{id}/faithfulness`` computes.

``explain_run(models, model, text, token_ids, request)`` checks the request against the model and the
run, builds the example (a classifier's text tokenised again, with a human rationale given per token
or as character spans; a causal LM's own ids cut after the explained position), bounds its cost
(each explainer's token cap, then the caller's ``admit`` budget), and runs ``explain_example``. It
returns an ``RunExplanation``: the example, the predicted distribution (a causal LM's ten most
likely next tokens, not its vocabulary), and each explainer's scores, metrics and time.

Refusals say what to change: ``RunRequestError`` (the request does not fit this run or model: a 422),
``TokenCapError`` (the input is over an explainer's interactive cap: a 413), ``NotAClassifierError``
and ``OutOfRangeError`` (a target or position outside the model's classes or the run).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attnscope.analysis.conventions import Convention, get_convention
from attnscope.analysis.indices import check_index
from attnscope.analysis.rollout import TooLongForFlowError
from attnscope.pipelines.explainers import (
    Encoded,
    NotAClassifierError,
    char_spans_to_tokens,
    check_explainers,
    example_from_ids,
    example_from_text,
    require_classifier,
)
from attnscope.pipelines.faithfulness_eval import METRICS, UnknownMetricError, check_metrics, explain_example, token_cap

TOP_NEXT_TOKENS = 10  # a causal LM's distribution is reported as its most likely next tokens


class RunRequestError(ValueError):
    """The request does not fit this run or model; the message says what to send instead."""


class TokenCapError(ValueError):
    """The input is longer than an explainer's interactive token cap; the message says what to do."""


@dataclass(frozen=True)
class ExplainRequest:
    """What to explain and how: explainer names, metric names and their options (see
    ``server/schemas/faithfulness.py`` for each field's meaning and bounds)."""

    explainers: Sequence[str]
    metrics: Sequence[str] = METRICS
    k: float = 0.2
    convention: str = "eraser"
    removal: str | None = None
    count: str | None = None
    target: int | None = None
    position: int | None = None
    human_rationale: Sequence[int] | None = None
    human_spans: Sequence[tuple[int, int]] | None = None
    options: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ExplainerOutcome:
    """One explainer: ``scores`` [token], seconds taken, its ERASER metrics (``analysis.faithfulness``'s
    result, None when none was asked) and its plausibility (None without a human rationale)."""

    name: str
    scores: np.ndarray
    seconds: float
    faithfulness: Any = None
    plausibility: Any = None


@dataclass(frozen=True)
class RunExplanation:
    """The example explained (``tokens``, ``special``, ``human``), the explained ``position`` (causal
    LMs), the predicted distribution (``labels``/``probs``; a causal LM's top next tokens with their
    ``label_ids``), the class or token explained and the convention the metrics followed."""

    example: Encoded
    position: int | None
    labels: list[str]
    probs: list[float]
    label_ids: list[int] | None
    target: int
    target_label: str | None
    convention: Convention
    explainers: list[ExplainerOutcome]


def _example(loaded, text: str, token_ids: Sequence[int] | None, req: ExplainRequest, next_token: bool):
    """The example to explain and the explained position (None for a classifier)."""
    if req.position is not None and not next_token:
        raise RunRequestError("position applies to causal LMs (the next token after it); omit it")
    if next_token:  # the run's own ids (prompt and generated tokens), cut after the explained position
        ids = list(token_ids)
        position = len(ids) - 1 if req.position is None else req.position
        check_index("position", position, len(ids), "the run", "positions")
        if req.human_rationale is not None or req.human_spans is not None:
            raise RunRequestError("human rationales apply to classifiers' texts, not to next tokens")
        return example_from_ids(loaded, ids[: position + 1], target=req.target), position
    ex = example_from_text(loaded, text, target=req.target)
    if req.human_rationale is not None:
        if len(req.human_rationale) != len(ex) or any(v not in (0, 1) for v in req.human_rationale):
            raise RunRequestError(
                f"human_rationale must be 0/1 for each of the run's {len(ex)} tokens (special tokens included)"
            )
        ex = replace(ex, human=np.asarray(req.human_rationale, dtype=np.int8))
    if req.human_spans is not None:
        if req.human_rationale is not None:
            raise RunRequestError("send human_rationale or human_spans, not both")
        bad = [sp for sp in req.human_spans if not 0 <= sp[0] < sp[1] <= len(text)]
        if bad:
            raise RunRequestError(
                f"human_spans {bad[:3]} are not [start, end) character ranges inside the run's text (0..{len(text)})"
            )
        ex = replace(ex, human=char_spans_to_tokens(loaded, text, req.human_spans)[: len(ex)])
    return ex, None


def check_token_caps(explainers: Sequence[str], options: dict[str, dict], n_tokens: int) -> None:
    """``TokenCapError`` when an explainer's interactive token cap is below the input's length."""
    for name in explainers:
        cap = token_cap(name, options, interactive=True)
        if cap is None or n_tokens <= cap:
            continue
        if name == "flow":
            raise TokenCapError(str(TooLongForFlowError(n_tokens, cap)))
        raise TokenCapError(
            f"{name} runs one forward pass per token: this input has {n_tokens} tokens, over the "
            f"interactive limit of {cap}. Shorten the text, raise options.{name}.max_tokens, or run "
            "the faithfulness job (POST /api/v1/jobs), which reports progress"
        )


def _distribution(loaded, probs: list[float], target: int, next_token: bool):
    """``(labels, probs, label_ids, target_label)``: a classifier's classes, or a causal LM's top next tokens."""
    if not next_token:
        labels = list(loaded.labels or [])
        return labels, probs, None, labels[target] if labels else None
    full = np.asarray(probs)
    label_ids = [int(i) for i in np.argsort(-full, kind="stable")[:TOP_NEXT_TOKENS]]
    labels = list(loaded.encode_ids(label_ids).tokens)
    return labels, [float(full[i]) for i in label_ids], label_ids, loaded.encode_ids([target]).tokens[0]


def explain_run(
    models: Any,
    model: str,
    text: str,
    token_ids: Sequence[int] | None,
    req: ExplainRequest,
    admit: Callable[[int], None] | None = None,
) -> RunExplanation:
    """Explain the prediction of model ``model`` (loaded through ``models.get``) on a run (its ``text``
    and ``token_ids``) as ``req`` asks. ``admit(n_tokens)`` is called once the example is built and
    may raise to refuse its cost (the API's compute budget). See the module docstring for refusals."""
    try:
        check_explainers(req.explainers)
        check_metrics(req.metrics)
    except ValueError as exc:
        raise RunRequestError(str(exc)) from None
    loaded = models.get(model)
    require_classifier(loaded)
    next_token = loaded.labels is None  # a causal LM: the classes are the vocabulary
    if req.target is not None:
        what = "tokens in its vocabulary" if next_token else "classes"
        check_index("target", req.target, int(loaded.classifier.config.num_labels), f"model {model!r}", what)
    ex, position = _example(loaded, text, token_ids, req, next_token)
    check_token_caps(req.explainers, req.options, len(ex))
    if admit is not None:
        admit(len(ex))
    try:
        res = explain_example(
            loaded,
            ex,
            req.explainers,
            k=req.k,
            convention=req.convention,
            removal=req.removal,
            count=req.count,
            metrics=req.metrics,
            options=req.options,
        )
    except (UnknownMetricError, NotAClassifierError, TooLongForFlowError, TypeError, ValueError) as exc:
        raise RunRequestError(f"{exc}") from None  # an option an explainer refuses, a metric that does not apply
    labels, probs, label_ids, target_label = _distribution(loaded, res["probs"], res["target"], next_token)
    outcomes = [
        ExplainerOutcome(
            name,
            res["scores"][name],
            res["seconds"][name],
            res["faithfulness"].get(name),
            res["plausibility"].get(name),
        )
        for name in req.explainers
    ]
    return RunExplanation(
        example=ex,
        position=position,
        labels=labels,
        probs=probs,
        label_ids=label_ids,
        target=res["target"],
        target_label=target_label,
        convention=get_convention(req.convention, req.removal, req.count),
        explainers=outcomes,
    )
