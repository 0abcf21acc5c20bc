"""Measure-theoretic view (docs/methods/markov-kernel.md): W1 profile, max-entropy check, Lipschitz bound vs estimate,
tokens as particles, fixed-point iteration of a shared block. Plain ``def`` routes (thread pool)."""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from typing import Annotated

import numpy as np
from cachetools import LRUCache
from fastapi import APIRouter, HTTPException, Query, Request, status

from attnscope.analysis.indices import check_index
from attnscope.analysis.measure import joint_pca, w1_between_inputs, w1_successive
from attnscope.models.capture import capture
from attnscope.models.registry import get_spec
from attnscope.pipelines.layers import UnsupportedLayerError, encoder_layers, layer_input, max_entropy_deviation
from attnscope.pipelines.lipschitz import lipschitz_report
from attnscope.pipelines.shared_block import BlockContraction, NoSharedBlockError, iterate_shared_block
from attnscope.server.deps import RunDep, ServiceDep
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import (
    BlockBound,
    ErrorBody,
    FixedPointPublic,
    LipschitzPublic,
    MeasurePublic,
    ParticlesPublic,
)

router = APIRouter(tags=["measure"])
ERRORS = {
    404: {"model": ErrorBody, "description": "unknown model or run"},
    413: {"model": ErrorBody, "description": "text longer than the model accepts"},
    422: {"model": ErrorBody, "description": "layer out of range, model without the needed layers, ..."},
}
DEFAULT_TEXT = "The quick brown fox jumps over the lazy dog because the dog was asleep."
_CACHE_LOCK = threading.Lock()


class _Results:
    """Small LRU of expensive results (Lipschitz estimates), kept on ``app.state``."""

    def __init__(self, size: int = 64):
        self._items: LRUCache = LRUCache(maxsize=size)
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            return self._items.get(key)

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value


def _results(request: Request) -> _Results:
    with _CACHE_LOCK:
        if getattr(request.app.state, "measure_results", None) is None:
            request.app.state.measure_results = _Results()
        return request.app.state.measure_results


def _unprocessable(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail)


def _check_layer(layer: int, n_layers: int) -> None:
    check_index("layer", layer, n_layers)


def _hidden(run) -> np.ndarray:
    """The run's token clouds ``[layer + 1, token, dim]``, or a 422 for models without them."""
    hs = run.capture.hidden()  # kept, or recomputed for a lazy causal-LM run
    if hs is None:
        raise _unprocessable(
            f"model {run.model!r} keeps no token clouds between layers (it is not a stack of "
            "transformer blocks), so the measure view has nothing to measure; use a "
            "transformer: minilm, a zoo ViT / text model, or an HA model"
        )
    return hs


def _layers_of(service, model: str) -> int:
    loaded = service.models.get(model)
    try:
        return len(encoder_layers(loaded))
    except UnsupportedLayerError as exc:
        raise _unprocessable(str(exc)) from None


@router.get(
    "/runs/{run_id}/measure",
    response_model=MeasurePublic,
    responses=ERRORS,
    summary="W1 between successive layers' token measures, and the max-entropy check per layer",
)
@heavy
def read_measure(
    run: RunDep,
    service: ServiceDep,
    compare: Annotated[
        str | None, Query(description="another run id of the same model: adds W1 between the two inputs at every depth")
    ] = None,
):
    hs = _hidden(run)
    body = MeasurePublic(
        run_id=run.id, model=run.model, n_tokens=int(hs.shape[1]), w1_successive=w1_successive(hs).tolist()
    )
    try:
        body.max_entropy_deviation = max_entropy_deviation(
            service.models.get(run.model), dataclasses.replace(run.capture, hidden_states=hs)
        ).tolist()  # hs once: a lazy causal-LM run recomputes it
        body.max_entropy_note = "rows re-solved by entropic mirror descent on s = QK^T/sqrt(d) (all biases), float64"
    except UnsupportedLayerError as exc:
        body.max_entropy_note = f"not available: {exc}"
    if compare is not None:
        other = service.store.get(compare) or service.restore(compare)  # as GET /runs/{id} does
        if other is None:
            raise HTTPException(
                status.HTTP_404_NOT_FOUND,
                f"no run with id {compare!r} to compare with; create it with POST /api/v1/runs (same model)",
            )
        if other.model != run.model:
            raise _unprocessable(
                f"compare needs a run of the same model: {run.id} is {run.model!r}, {compare} is {other.model!r}"
            )
        body.compare_run_id = compare
        body.w1_between = w1_between_inputs(hs, _hidden(other)).tolist()
    return body


@router.get(
    "/models/{name}/lipschitz",
    response_model=LipschitzPublic,
    responses=ERRORS,
    summary="DERIVED W1-Lipschitz bound of one attention layer against an empirical estimate",
)
@heavy
def read_lipschitz(
    name: str,
    request: Request,
    service: ServiceDep,
    layer: Annotated[int, Query(ge=0, le=63, description="zero-based attention layer")],
    run_id: Annotated[str | None, Query(description="measure R and perturb the layer's input for this run")] = None,
    text: Annotated[str | None, Query(max_length=5000, description="or for this text (default: an example)")] = None,
    residual: Annotated[bool, Query(description="include the residual x + F(x)")] = False,
    steps: Annotated[int, Query(ge=1, le=200, description="gradient-ascent steps per start")] = 25,
    draws: Annotated[int, Query(ge=1, le=20, description="random perturbations per size and kind")] = 3,
):
    get_spec(name)  # 404 before any loading
    _check_layer(layer, _layers_of(service, name))
    loaded = service.models.get(name)
    if run_id is not None and text is not None:
        raise _unprocessable("give run_id or text, not both")
    if run_id is not None:
        run = service.store.get(run_id) or service.restore(run_id)  # as GET /runs/{id} does
        if run is None:
            raise HTTPException(
                status.HTTP_404_NOT_FOUND, f"no run with id {run_id!r}; create it with POST /api/v1/runs"
            )
        if run.model != name:
            raise _unprocessable(f"run {run_id} belongs to model {run.model!r}, not {name!r}; use a run of {name!r}")
        hidden = _hidden(run)
    else:
        if text is not None and not text.strip():
            raise _unprocessable("text is empty; send a sentence or leave text out for the example")
        hidden = capture(loaded, text or DEFAULT_TEXT).hidden()
    x = np.ascontiguousarray(layer_input(loaded, hidden, layer), dtype=np.float64)
    key = (name, layer, residual, steps, draws, hashlib.sha256(x.tobytes()).hexdigest())
    results = _results(request)
    cached = results.get(key)
    if cached is not None:
        return cached
    r = lipschitz_report(loaded, layer, x, residual=residual, n_draws=draws, ascent_steps=steps)
    body = LipschitzPublic(
        model=name,
        layer=layer,
        n_tokens=r.n_tokens,
        radius=r.radius,
        residual=residual,
        log10_bound=r.bound.log10_bound,
        log10_bound_per_head=r.bound.log10_per_head.tolist(),
        log10_bound_without_bias=r.bound.log10_bound_without_bias,
        estimate=r.estimate,
        log10_estimate=r.log10_estimate,
        log10_ratio=r.log10_ratio,
        best_random=r.best_random,
        best_ascent=r.best_ascent,
        n_evaluations=r.n_evaluations,
        seconds=r.seconds,
    )
    results.put(key, body)
    return body


@router.get(
    "/runs/{run_id}/particles",
    response_model=ParticlesPublic,
    responses=ERRORS,
    summary="Hidden states per depth projected to 2D/3D by one PCA fitted on all depths together",
)
@heavy
def read_particles(run: RunDep, dims: Annotated[int, Query(ge=2, le=3, description="2 or 3 components")] = 2):
    hs = _hidden(run)
    coords, ratio = joint_pca(hs, k=dims)
    labels = ["embeddings"] + [f"after layer {l}" for l in range(hs.shape[0] - 1)]
    return ParticlesPublic(
        run_id=run.id,
        model=run.model,
        tokens=list(run.capture.maps.tokens),
        dims=dims,
        depth_labels=labels,
        coords=np.round(coords, 5).tolist(),
        explained_variance=ratio.tolist(),
        w1_successive=w1_successive(hs).tolist(),
    )


@router.get(
    "/runs/{run_id}/fixed-point",
    response_model=FixedPointPublic,
    responses=ERRORS,
    summary="Iterate a shared block (HA models) or one layer's block past its trained depth",
)
@heavy
def read_fixed_point(
    run: RunDep,
    service: ServiceDep,
    steps: Annotated[int, Query(ge=1, le=500, description="iterations")] = 30,
    layer: Annotated[
        int | None,
        Query(
            ge=0,
            le=63,
            description="iterate this layer's block with its own weights "
            "(a demonstration); omit for the model's shared block",
        ),
    ] = None,
):
    loaded = service.models.get(run.model)
    if layer is not None:
        _check_layer(layer, _layers_of(service, run.model))
    x0 = _hidden(run)[0 if layer is None else layer]
    try:
        it = iterate_shared_block(loaded, x0, steps, layer=layer)
    except NoSharedBlockError as exc:
        raise _unprocessable(str(exc)) from None
    except ValueError as exc:  # the iteration diverged
        raise _unprocessable(f"the iteration failed: {exc}; try fewer steps") from None
    res = it.result
    return FixedPointPublic(
        run_id=run.id,
        model=run.model,
        block=it.label,
        demonstration=it.demonstration,
        trained_depth=it.trained_depth,
        start_depth=it.start_depth,
        n_steps=steps,
        w1_steps=res.w1_steps.tolist(),
        rate=None if not np.isfinite(res.rate) else res.rate,
        converged=res.converged,
        orbit_radius=res.radius,
        log10_bound_attention=it.log10_bound_attention,
        attention_contraction=it.attention_contraction,
        behaviour=res.behaviour,
        drift=res.drift,
        w1_normalised_steps=res.w1_normalised.tolist(),
        normalised_order=res.normalised_order,
        block_bound=None if it.block_contraction is None else _block_bound_public(it.block_contraction),
    )


def _finite(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


def _block_bound_public(c: BlockContraction) -> BlockBound:
    g, o, e = c.global_bound, c.orbit, c.estimate
    return BlockBound(
        log10_global_bound=g.log10_bound,
        ln1_factor=g.ln1_factor,
        attention_factor=g.attention_factor,
        ln2_factor=g.ln2_factor,
        ffn_factor=g.ffn_factor,
        contraction=c.contraction,
        log10_orbit_bound=o.log10_bound.tolist(),
        orbit_step_ratio=[_finite(v) for v in o.observed],
        orbit_worst_slack=_finite(o.worst_slack),
        estimate=e.estimate,
        log10_bound_at_estimate=e.log10_bound_at_estimate,
        estimate_worst_slack=e.worst_slack,
    )
