"""Circuits of a clean/corrupted text pair: ``POST /circuits`` (EAP or EAP-IG over every edge, the
top edges, faithfulness, exact re-check; or a posted pair set, or a shipped task set),
``POST /runs/{id}/circuits`` (the run's text as the clean input) and ``POST /circuits/path-patch``
(one edge, exactly); the work is in ``attnscope.pipelines.circuits.texts``."""

from __future__ import annotations

from fastapi import APIRouter, status

from attnscope.models.sites import SiteOutOfRangeError, SitesUnavailableError
from attnscope.pipelines.circuits.task_sets import task_batch
from attnscope.pipelines.circuits.texts import TextPair, circuit_of_texts, edge_of_texts
from attnscope.server.deps import RunDep, ServiceDep
from attnscope.server.errors import ApiError, error_responses
from attnscope.server.request_executor import heavy
from attnscope.server.schemas.circuits import (
    MAX_CIRCUIT_PAIRS,
    CheckedEdge,
    CircuitCreate,
    CircuitEdge,
    CircuitPublic,
    CurvePoint,
    PairText,
    PathPatchCreate,
    PathPatchPublic,
    RunCircuitCreate,
)

router = APIRouter(prefix="/circuits", tags=["circuits"])
run_router = APIRouter(prefix="/runs", tags=["circuits"])
ERRORS = error_responses(
    404,
    {
        422: "the request does not fit the model: texts of different token lengths, posted pairs the model "
        "fails or of different lengths, an answer that is not one token, an unknown sender or receiver, a pair "
        "that is not an edge, a model without the anatomy circuits need (the detail names what to change)"
    },
)


def _invalid(exc: Exception) -> ApiError:
    return ApiError(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc))


def _public(res, task_pairs: list[TextPair] | None = None) -> CircuitPublic:
    return CircuitPublic(
        method=res.method,
        steps=res.steps,
        n_senders=len(res.senders),
        n_receivers=len(res.receivers),
        n_layers=sum(name.startswith("m") for name in res.senders),
        n_heads=sum(name.startswith("a0.") for name in res.senders),
        n_kv_heads=sum(name.startswith("a0.g") and name.endswith("<k>") for name in res.receivers),
        n_edges=res.n_edges,
        edges=[CircuitEdge(sender=s, receiver=r, score=v) for s, r, v in res.edges],
        n_kept=res.n_kept,
        threshold=res.threshold,
        m_clean=res.m_clean,
        m_corrupted=res.m_corrupted,
        m_circuit=res.m_circuit,
        n_pairs=res.n_pairs,
        ablation=res.ablation,
        m_empty=res.m_empty,
        faithfulness=res.faithfulness,
        curve=[CurvePoint(k=k, faithfulness=f) for k, f in res.curve],
        check_spearman=res.check_spearman,
        check=[CheckedEdge(sender=s, receiver=r, score=a, exact=e) for s, r, a, e in res.check],
        task_pairs=None if task_pairs is None else [PairText(**p.__dict__) for p in task_pairs],
    )


@router.post("", response_model=CircuitPublic, responses=ERRORS, summary="A circuit of a clean/corrupted pair")
@heavy
def create_circuit(body: CircuitCreate, service: ServiceDep) -> CircuitPublic:
    backend = service.models.get(body.model)
    pairs = None if body.pairs is None else [TextPair(p.clean, p.corrupted, p.answer, p.wrong) for p in body.pairs]
    try:
        if body.task is not None:  # the solved items of a shipped set, one batch
            pairs = task_batch(backend, body.task, MAX_CIRCUIT_PAIRS)
        res = circuit_of_texts(
            backend, body.clean, body.corrupted, body.metric, body.answer, body.wrong, body.method, body.steps,
            body.k, body.n_check, body.curve_points, pairs, body.ablation, body.threshold,
        )  # fmt: skip
    except (ValueError, SitesUnavailableError, SiteOutOfRangeError) as exc:
        raise _invalid(exc) from None
    return _public(res, pairs if body.task is not None else None)


@run_router.post(
    "/{run_id}/circuits",
    response_model=CircuitPublic,
    responses=ERRORS,
    summary="A circuit of a run: its text is the clean input, its model the model",
)
@heavy
def create_run_circuit(run: RunDep, body: RunCircuitCreate, service: ServiceDep) -> CircuitPublic:
    if run.image is not None:
        raise ApiError(status.HTTP_422_UNPROCESSABLE_CONTENT, "circuits read a causal LM's text; this run is an image")
    backend = service.models.get(run.model)
    try:
        res = circuit_of_texts(
            backend, run.text, body.corrupted, body.metric, body.answer, body.wrong, body.method, body.steps, body.k,
            body.n_check, body.curve_points, threshold=body.threshold,
        )  # fmt: skip
    except (ValueError, SitesUnavailableError, SiteOutOfRangeError) as exc:
        raise _invalid(exc) from None
    return _public(res)


@router.post("/path-patch", response_model=PathPatchPublic, responses=ERRORS, summary="Exact path patching of one edge")
@heavy
def create_path_patch(body: PathPatchCreate, service: ServiceDep) -> PathPatchPublic:
    backend = service.models.get(body.model)
    try:
        res = edge_of_texts(
            backend, body.clean, body.corrupted, body.sender, body.receiver, body.direction, body.metric,
            body.answer, body.wrong,
        )  # fmt: skip
    except (ValueError, SitesUnavailableError, SiteOutOfRangeError) as exc:
        raise _invalid(exc) from None
    return PathPatchPublic(**res.__dict__)
