"""Causal tests of heads on one run: an intervention set (``POST /runs/{id}/interventions``), the
per-head effect grid beside attention-based importance (``POST /runs/{id}/head-effects``) and the
layer x position patching sweep (``POST /runs/{id}/residual-patching``)."""

from __future__ import annotations

import json
import time

from fastapi import APIRouter, status

from attnscope.analysis.interventions import head_confidence, rank_agreement, top_heads
from attnscope.models.interface import Capture, ModelInput
from attnscope.pipelines.interventions import (
    EdgeKnockout,
    HeadAblation,
    HeadPatch,
    InterventionError,
    InterventionSet,
    MetricSpec,
    ResidualPatch,
    head_effects,
    intervene,
)
from attnscope.pipelines.interventions.sweep import residual_patching
from attnscope.pipelines.writes.beside_effects import dla_beside_effect
from attnscope.pipelines.writes.recorded import record_writes
from attnscope.server.deps import RunDep, ServiceDep
from attnscope.server.errors import ApiError, error_responses
from attnscope.server.predictions import prediction_of
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import (
    HeadEffectsCreate,
    HeadEffectsPublic,
    InterventionCreate,
    InterventionPublic,
    ResidualPatchingCreate,
    ResidualPatchingPublic,
)
from attnscope.server.schemas.interventions import MAX_PATCH_CELLS, Ablate, Knockout, PatchHeads
from attnscope.server.store import Run, run_key

router = APIRouter(prefix="/runs", tags=["interventions"])
ERRORS = error_responses(
    404,
    413,
    {
        422: "the intervention does not fit the model or the input (unknown heads, empty set, patch inputs of "
        "different lengths, answers that are not one token, a metric the model's task has no use for, a model "
        "without per-head outputs); the detail says what to change"
    },
)


def _invalid(exc: Exception) -> ApiError:
    return ApiError(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc))


def _to_set(items) -> InterventionSet:
    out = []
    for it in items:
        if isinstance(it, Ablate):
            out.append(HeadAblation(tuple(tuple(h) for h in it.heads), it.method))
        elif isinstance(it, Knockout):
            out.append(EdgeKnockout(tuple(it.layers), tuple(tuple(e) for e in it.edges), it.heads and tuple(it.heads)))
        elif isinstance(it, PatchHeads):
            out.append(HeadPatch(tuple(tuple(h) for h in it.heads)))
        else:
            out.append(ResidualPatch(it.layer, tuple(it.positions)))
    return InterventionSet(tuple(out))


def _input(backend, run: Run) -> ModelInput:
    if run.image is not None:
        return backend.encode_image(run.image)
    return backend.encode_ids(list(run.capture.token_ids))


def _answer_ids(backend, answers: list[str] | None) -> tuple[int, int] | None:
    """Each answer must be exactly one token of the model (no special tokens added)."""
    if answers is None:
        return None
    if backend.spec.task != "causal-lm":
        raise InterventionError("answers go with metric answer_logit_diff, which needs a causal LM")
    ids = []
    for text in answers:
        toks = backend.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(toks) != 1:
            raise InterventionError(
                f"answer {text!r} is {len(toks)} tokens of model {backend.spec.name!r}; each answer must be exactly "
                "one token (a leading space usually belongs to the token: ' Paris')"
            )
        ids.append(int(toks[0]))
    return ids[0], ids[1]


def _common(body, run: Run, service):
    backend = service.models.get(run.model)
    inp = _input(backend, run)
    source = None
    if body.corrupted is not None:
        if run.image is not None:
            raise InterventionError("patching between images is not offered; patching needs a text run")
        source = backend.encode_text(body.corrupted)
    metric = MetricSpec(body.metric, body.positions and tuple(body.positions), _answer_ids(backend, body.answers))
    return backend, inp, source, metric


def _metric_fields(m) -> dict:
    """The metric an answer reports (``metric``, ``positions``, ``answers``), as every route gives it."""
    return {
        "metric": m.kind,
        "positions": None if m.positions is None else list(m.positions),
        "answers": None if m.answers is None else list(m.answers),
    }


@router.post(
    "/{run_id}/interventions",
    response_model=InterventionPublic,
    responses=ERRORS,
    summary="Apply an intervention set (head ablation, edge knockout, activation patching) to a run: the altered "
    "prediction, the effect on each metric, and the altered maps served as a run",
)
@heavy
def create_intervention(run: RunDep, body: InterventionCreate, service: ServiceDep) -> InterventionPublic:
    try:
        backend, inp, source, metric = _common(body, run, service)
        res = intervene(
            backend, inp, _to_set(body.interventions), metric, source, body.direction, service.head_means, True
        )
    except InterventionError as exc:
        raise _invalid(exc) from None
    key = json.dumps(body.model_dump(mode="json"), sort_keys=True)
    altered_id = run_key(run.model, f"intervention\x00{run.id}\x00{key}")
    maps = res["altered_maps"]
    target = res["target"]
    cap = Capture(maps, res["altered"], None, token_ids=target.token_ids, attention=backend.attention)
    derived = f"the maps of an intervention on run {run.id}"
    norms = res["altered_value_norms"]
    service.store.put(
        Run(
            id=altered_id,
            model=run.model,
            text=run.text,
            capture=cap,
            image=run.image,
            derived=derived,
            value_norms=norms,
        )
    )
    m = res["metric"]
    return InterventionPublic(
        run_id=run.id,
        altered_run_id=altered_id,
        **_metric_fields(m),
        effects=res["effects"],
        clean=prediction_of(res["clean"]),
        altered=prediction_of(res["altered"]),
        shape=list(maps.shape),
    )


@router.post(
    "/{run_id}/head-effects",
    response_model=HeadEffectsPublic,
    responses=ERRORS,
    summary="One ablation (or patch) per head, batched: the per-head effect grid, beside attention-based head "
    "importance and, for causal LMs, each head's direct logit attribution, with their Spearman rank correlations",
)
@heavy
def create_head_effects(run: RunDep, body: HeadEffectsCreate, service: ServiceDep) -> HeadEffectsPublic:
    start = time.perf_counter()
    try:
        backend, inp, source, metric = _common(body, run, service)
        res = head_effects(backend, inp, body.method, metric, source, body.direction, service.head_means, body.chunk)
    except InterventionError as exc:
        raise _invalid(exc) from None
    maps = run.capture.maps if res["target"] is inp else backend.run(res["target"], hidden_states=False).maps
    importance = head_confidence(maps)
    agree = rank_agreement(res["effect"], importance)
    m = res["metric"]
    beside = None
    if res["target"] is inp and inp.token_ids is not None:  # the run itself was ablated: its DLA compares

        def recording():
            return service.recordings.get(run.id, lambda: record_writes(backend, inp))

        beside = dla_beside_effect(backend, inp.token_ids, m.kind, m.positions, m.answers, res["effect"], recording)
    return HeadEffectsPublic(
        run_id=run.id,
        method=body.method,
        **_metric_fields(m),
        effect=res["effect"].tolist(),
        top=[{"layer": a, "head": b, "effect": e} for a, b, e in top_heads(res["effect"], 10)],
        clean=prediction_of(res["clean"]),
        importance=importance.tolist(),
        rank_agreement={"rho": agree.rho, "p": agree.p, "n": agree.n},
        dla=None if beside is None else beside.heads.tolist(),
        dla_agreement=None if beside is None else vars(beside.agreement),
        dla_against=None if beside is None else beside.against,
        seconds=time.perf_counter() - start,
    )


@router.post(
    "/{run_id}/residual-patching",
    response_model=ResidualPatchingPublic,
    responses=ERRORS,
    summary="The layer x position patching sweep: the metric change when the residual stream after one block at "
    "one position alone comes from the corrupted input (TransformerLens's activation-patching plot)",
)
@heavy
def create_residual_patching(run: RunDep, body: ResidualPatchingCreate, service: ServiceDep) -> ResidualPatchingPublic:
    start = time.perf_counter()
    try:
        backend, inp, source, metric = _common(body, run, service)
        cells = backend.n_layers * len(inp)
        if cells > MAX_PATCH_CELLS:
            raise ApiError(
                status.HTTP_413_CONTENT_TOO_LARGE,
                f"the sweep would patch {backend.n_layers} layers x {len(inp)} tokens = {cells} cells; at most "
                f"{MAX_PATCH_CELLS}: use a shorter text",
            )
        res = residual_patching(backend, inp, source, metric, body.direction, body.chunk)
    except InterventionError as exc:
        raise _invalid(exc) from None
    m = res["metric"]
    return ResidualPatchingPublic(
        run_id=run.id,
        direction=body.direction,
        **_metric_fields(m),
        tokens=list(res["target"].tokens),
        effect=res["effect"].tolist(),
        full=res["full"],
        clean=prediction_of(res["clean"]),
        seconds=time.perf_counter() - start,
    )
