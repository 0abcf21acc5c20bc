"""Faithfulness: ERASER metrics of explainers' token scores, per run and per data set (a job).

- ``POST /runs/{id}/faithfulness``: scores of each chosen explainer on the run's text, with
  comprehensiveness/sufficiency (at k), AOPC curves and, given a human rationale, plausibility.
- ``GET /faithfulness/explainers``: the explainers and what they do.
- Job kind ``faithfulness`` (``POST /jobs``): the explainer x metric table over a data set.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from fastapi import APIRouter, HTTPException, status

from attnscope.analysis.faithfulness import get_convention
from attnscope.analysis.indices import check_index
from attnscope.analysis.rollout import TooLongForFlowError
from attnscope.pipelines.explainers import (
    EXPLAINERS,
    NotAClassifierError,
    char_spans_to_tokens,
    check_explainers,
    encode_ids,
    encode_text,
    require_classifier,
)
from attnscope.pipelines.faithfulness_eval import (
    FAITHFULNESS_METRICS,
    UnknownMetricError,
    check_metrics,
    explain_example,
    token_cap,
)
from attnscope.server.budget import check_budget
from attnscope.server.deps import RunDep, ServiceDep, SettingsDep
from attnscope.server.errors import error_responses
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import ExplainerPublic, ExplainerScores, FaithfulnessCreate, FaithfulnessPublic

router = APIRouter(tags=["faithfulness"])
UNPROCESSABLE = status.HTTP_422_UNPROCESSABLE_CONTENT


def _check_names(explainers: list[str], metrics: list[str]) -> None:
    check_explainers(explainers)
    check_metrics(metrics)


@router.get("/faithfulness/explainers", response_model=list[ExplainerPublic], summary="Explainers available")
def read_explainers() -> list[ExplainerPublic]:
    return [ExplainerPublic(name=n, description=c.description) for n, c in EXPLAINERS.items()]


@router.post(
    "/runs/{run_id}/faithfulness",
    response_model=FaithfulnessPublic,
    responses=error_responses(
        404,
        {
            413: "the input is longer than an explainer's token cap, or the request's cost (tokens x steps x "
            "explainers) is over the compute budget (ATTNSCOPE_COMPUTE_BUDGET): run it as a job"
        },
    ),
    summary="Explain a run's prediction and score the explanations (ERASER metrics)",
)
@heavy
def create_faithfulness(
    run: RunDep, body: FaithfulnessCreate, service: ServiceDep, settings: SettingsDep
) -> FaithfulnessPublic:
    # plain def: model work runs in the threadpool, never on the event loop
    try:
        _check_names(body.explainers, body.metrics)
    except ValueError as exc:
        raise HTTPException(UNPROCESSABLE, str(exc)) from None
    loaded = service.models.get(run.model)
    try:
        require_classifier(loaded)
    except NotAClassifierError as exc:
        raise HTTPException(
            UNPROCESSABLE, f"run {run.id} uses model {run.model!r}, whose task is {loaded.spec.task}: {exc}"
        ) from None
    next_token = loaded.labels is None  # a causal LM: the classes are the vocabulary
    n_classes = int(loaded.classifier.config.num_labels)
    if body.target is not None:
        what = "tokens in its vocabulary" if next_token else "classes"
        check_index("target", body.target, n_classes, f"model {run.model!r}", what)
    if body.position is not None and not next_token:
        raise HTTPException(UNPROCESSABLE, "position applies to causal LMs (the next token after it); omit it")
    if next_token:  # the run's own ids (prompt and generated tokens), cut after the explained position
        ids = list(run.capture.token_ids)
        position = len(ids) - 1 if body.position is None else body.position
        check_index("position", position, len(ids), "the run", "positions")
        if body.human_rationale is not None or body.human_spans is not None:
            raise HTTPException(UNPROCESSABLE, "human rationales apply to classifiers' texts, not to next tokens")
        ex = encode_ids(loaded, ids[: position + 1], target=body.target)
    else:
        position = None
        ex = encode_text(loaded, run.text, target=body.target)
    if body.human_rationale is not None:
        if len(body.human_rationale) != len(ex) or any(v not in (0, 1) for v in body.human_rationale):
            raise HTTPException(
                UNPROCESSABLE,
                f"human_rationale must be 0/1 for each of the run's {len(ex)} tokens (special tokens included)",
            )
        ex = replace(ex, human=np.asarray(body.human_rationale, dtype=np.int8))
    if body.human_spans is not None:
        if body.human_rationale is not None:
            raise HTTPException(UNPROCESSABLE, "send human_rationale or human_spans, not both")
        bad = [sp for sp in body.human_spans if not 0 <= sp[0] < sp[1] <= len(run.text)]
        if bad:
            raise HTTPException(
                UNPROCESSABLE,
                f"human_spans {bad[:3]} are not [start, end) character ranges "
                f"inside the run's text (0..{len(run.text)})",
            )
        human = char_spans_to_tokens(loaded, run.text, body.human_spans)[: len(ex)]
        ex = replace(ex, human=human)
    options = body.options.as_dict()
    _check_token_caps(body.explainers, options, len(ex))
    with_metrics = any(m in FAITHFULNESS_METRICS for m in body.metrics)
    check_budget(body.explainers, len(ex), options, settings.compute_budget, with_metrics)
    try:
        res = explain_example(
            loaded,
            ex,
            body.explainers,
            k=body.k,
            convention=body.convention,
            removal=body.removal,
            count=body.count,
            metrics=body.metrics,
            options=options,
        )
    except (UnknownMetricError, NotAClassifierError, TooLongForFlowError, TypeError, ValueError) as exc:
        raise HTTPException(UNPROCESSABLE, f"{exc}") from None
    conv = get_convention(body.convention, body.removal, body.count)
    results = []
    for name in body.explainers:
        item = {"name": name, "scores": res["scores"][name].tolist(), "seconds": round(res["seconds"][name], 4)}
        f = res["faithfulness"].get(name)
        if f is not None:
            item.update(
                rationale=f.rationale,
                comp_curve=f.comp_curve,
                suff_curve=f.suff_curve,
                **{m: getattr(f, m) for m in FAITHFULNESS_METRICS if m in body.metrics},
            )
        p = res["plausibility"].get(name)
        if p is not None:
            item.update(
                {
                    m: v
                    for m, v in (("token_f1", p.token.f1), ("iou_f1", p.iou.f1), ("auprc", p.auprc))
                    if m in body.metrics
                }
            )
        results.append(ExplainerScores(**item))
    labels, probs, label_ids = list(loaded.labels or []), res["probs"], None
    target_label = labels[res["target"]] if labels else None
    if next_token:  # the 10 most likely next tokens, not the whole vocabulary
        full = np.asarray(res["probs"])
        label_ids = [int(i) for i in np.argsort(-full, kind="stable")[:10]]
        labels, probs = list(loaded.encode_ids(label_ids).tokens), [float(full[i]) for i in label_ids]
        target_label = loaded.encode_ids([res["target"]]).tokens[0]
    return FaithfulnessPublic(
        run_id=run.id,
        model=run.model,
        tokens=list(ex.tokens),
        special=list(ex.special),
        labels=labels,
        probs=probs,
        label_ids=label_ids,
        target=res["target"],
        target_label=target_label,
        position=position,
        convention=conv.name,
        removal=conv.removal,
        count=conv.count,
        k=body.k,
        bins=list(conv.bins),
        metrics=body.metrics,
        human_rationale=None if ex.human is None else [int(v) for v in ex.human],
        explainers=results,
    )


def _check_token_caps(explainers: list[str], options: dict[str, dict], n_tokens: int) -> None:
    """413 when an explainer's interactive token cap is below the input's length, saying what to do."""
    for name in explainers:
        cap = token_cap(name, options, interactive=True)
        if cap is None or n_tokens <= cap:
            continue
        if name == "flow":
            detail = str(TooLongForFlowError(n_tokens, cap))
        else:
            detail = (
                f"{name} runs one forward pass per token: this input has {n_tokens} tokens, over the "
                f"interactive limit of {cap}. Shorten the text, raise options.{name}.max_tokens, or run "
                "the faithfulness job (POST /api/v1/jobs), which reports progress"
            )
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, detail)
