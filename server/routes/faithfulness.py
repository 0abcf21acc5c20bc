"""Faithfulness: ERASER metrics of explainers' token scores, per run and per data set (a job).

- ``POST /runs/{id}/faithfulness``: scores of each chosen explainer on the run's text, with
  comprehensiveness/sufficiency (at k), AOPC curves and, given a human rationale, plausibility.
- ``GET /faithfulness/explainers``: the explainers and what they do.
- Job kind ``faithfulness`` (``POST /jobs``): the explainer x metric table over a data set.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status

from attnscope.pipelines.explainers import EXPLAINERS, NotAClassifierError
from attnscope.pipelines.faithfulness_eval import FAITHFULNESS_METRICS
from attnscope.pipelines.run_explanation import ExplainRequest, RunRequestError, TokenCapError, explain_run
from attnscope.server.budget import check_budget
from attnscope.server.deps import RunDep, ServiceDep, SettingsDep
from attnscope.server.errors import error_responses
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import ExplainerPublic, ExplainerScores, FaithfulnessCreate, FaithfulnessPublic

router = APIRouter(tags=["faithfulness"])
UNPROCESSABLE = status.HTTP_422_UNPROCESSABLE_CONTENT


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
    # plain def: model work runs on the heavy executor, never on the event loop
    options = body.options.as_dict()
    with_metrics = any(m in FAITHFULNESS_METRICS for m in body.metrics)
    req = ExplainRequest(
        explainers=body.explainers,
        metrics=body.metrics,
        k=body.k,
        convention=body.convention,
        removal=body.removal,
        count=body.count,
        target=body.target,
        position=body.position,
        human_rationale=body.human_rationale,
        human_spans=body.human_spans,
        options=options,
    )
    try:
        got = explain_run(
            service.models,
            run.model,
            run.text,
            run.capture.token_ids,
            req,
            admit=lambda n: check_budget(body.explainers, n, options, settings.compute_budget, with_metrics),
        )
    except NotAClassifierError as exc:
        task = service.models.get(run.model).spec.task
        raise HTTPException(
            UNPROCESSABLE, f"run {run.id} uses model {run.model!r}, whose task is {task}: {exc}"
        ) from None
    except TokenCapError as exc:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, str(exc)) from None
    except RunRequestError as exc:
        raise HTTPException(UNPROCESSABLE, str(exc)) from None
    results = []
    for e in got.explainers:
        item = {"name": e.name, "scores": e.scores.tolist(), "seconds": round(e.seconds, 4)}
        f = e.faithfulness
        if f is not None:
            item.update(
                rationale=f.rationale,
                comp_curve=f.comp_curve,
                suff_curve=f.suff_curve,
                **{m: getattr(f, m) for m in FAITHFULNESS_METRICS if m in body.metrics},
            )
        p = e.plausibility
        if p is not None:
            item.update(
                {
                    m: v
                    for m, v in (("token_f1", p.token.f1), ("iou_f1", p.iou.f1), ("auprc", p.auprc))
                    if m in body.metrics
                }
            )
        results.append(ExplainerScores(**item))
    ex, conv = got.example, got.convention
    return FaithfulnessPublic(
        run_id=run.id,
        model=run.model,
        tokens=list(ex.tokens),
        special=list(ex.special),
        labels=got.labels,
        probs=got.probs,
        label_ids=got.label_ids,
        target=got.target,
        target_label=got.target_label,
        position=got.position,
        convention=conv.name,
        removal=conv.removal,
        count=conv.count,
        k=body.k,
        bins=list(conv.bins),
        metrics=body.metrics,
        human_rationale=None if ex.human is None else [int(v) for v in ex.human],
        explainers=results,
    )
