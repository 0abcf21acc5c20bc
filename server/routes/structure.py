"""Structure analyses of one run: shift scan + implied kernels, head types, evolution, rollout/flow."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from fastapi import APIRouter, Depends, HTTPException, Query, status

from attnscope.analysis.distance import distance_from
from attnscope.analysis.evolution import Evolution, compare, evolution_from
from attnscope.analysis.heads import classify_heads
from attnscope.analysis.implied_conv import convolution_from
from attnscope.analysis.indices import check_index
from attnscope.analysis.rollout import (
    MAX_FLOW_TOKENS,
    attention_flow,
    default_row,
    rollout_importance,
    rollout_of_values,
)
from attnscope.analysis.shift import DEFAULT_K, DEFAULT_RADIUS, DEFAULT_THRESHOLD, shift_scan_from
from attnscope.pipelines.induction_probe import probe_note
from attnscope.server.deps import RunDep, ServiceDep
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import (
    EvolutionProfile,
    EvolutionPublic,
    HeadsPublic,
    ImportancePublic,
    ShiftPublic,
    StructurePassPublic,
)

router = APIRouter(prefix="/runs", tags=["structure"])

K = Annotated[int, Query(ge=1, le=64, description="1D offsets -k..k")]
RADIUS = Annotated[int, Query(ge=1, le=8, description="2D window radius (grid inputs)")]
THRESHOLD = Annotated[float, Query(ge=0, le=1, description="minimum shift_score of a shift head")]
ROW = Annotated[
    str,
    Query(
        pattern=r"^(cls|mean|[0-9]{1,9})$",
        description="output position explained: 'cls' (the output row: an encoder's first special position, "
        "a causal LM's last position), 'mean', or an index",
    ),
]


def _ticket(run_id: str, service: ServiceDep) -> int:
    """The run's cancel count when the request arrives (before it queues for a heavy worker)."""
    return service.structure.ticket(run_id)


TicketDep = Annotated[int, Depends(_ticket)]


def _offset(o):
    return [int(v) for v in o] if np.ndim(o) else int(o)


@router.get("/{run_id}/shift", response_model=ShiftPublic, summary="Shift scan and implied convolution per head")
@heavy
def read_shift(
    run: RunDep,
    service: ServiceDep,
    ticket: TicketDep,
    k: K = DEFAULT_K,
    radius: RADIUS = DEFAULT_RADIUS,
    threshold: THRESHOLD = DEFAULT_THRESHOLD,
    include_special: bool = False,
) -> ShiftPublic:
    maps = run.capture.maps
    red = service.structure.get(run, k=k, radius=radius, include_special=include_special, ticket=ticket)
    scan = shift_scan_from(red, maps.layer_ids, maps.head_ids, threshold)
    conv = convolution_from(red, maps.layer_ids, maps.head_ids)
    offs = [_offset(o) for o in scan.offsets]
    pick = lambda idx: [[offs[int(i)] for i in row] for row in idx]  # noqa: E731
    return ShiftPublic(
        run_id=run.id,
        offsets=offs,
        kernel_shape=list(conv.index.kernel_shape),
        threshold=threshold,
        mass=scan.mass.tolist(),
        best_offset=pick(scan.best),
        best_mass=scan.best_mass.tolist(),
        runner_up_offset=pick(scan.runner_up),
        runner_up_mass=scan.runner_up_mass.tolist(),
        shift_score=scan.shift_score.tolist(),
        is_shift=scan.is_shift.tolist(),
        kernel=conv.kernel.tolist(),
        r2=conv.r2.tolist(),
        shift_heads=[
            {**r.__dict__, "offset": _offset(r.offset), "runner_up": _offset(r.runner_up)} for r in scan.shift_heads()
        ],
    )


@router.get("/{run_id}/heads", response_model=HeadsPublic, summary="Head types with scores, and attention distance")
@heavy
def read_heads(
    run: RunDep,
    service: ServiceDep,
    ticket: TicketDep,
    probe: Annotated[
        bool, Query(description="also run the repeated-random-token probe for duplicate-token and induction scores")
    ] = True,
) -> HeadsPublic:
    maps = run.capture.maps
    probe_data, note = None, None
    if probe and maps.grid is None:
        try:
            probe_data = service.probe(run.model)
            note = probe_note(service.models.get(run.model))
        except ValueError as exc:
            note = f"probe skipped: {exc}"
    red = service.structure.get(run, ticket=ticket)  # the pass the shift route made (or makes) for this run
    types = classify_heads(maps, probe=probe_data, reductions=red)
    dist = distance_from(red, maps)
    table = types.table()
    flat = dist.per_head.reshape(-1)
    attention = run.capture.attention
    kv_of = None if attention is None else attention.kv_head_of
    for rec, d, (li, hi) in zip(table, flat, np.ndindex(dist.per_head.shape)):
        rec.update(layer=int(maps.layer_ids[li]), head_index=int(maps.head_ids[hi]), distance=float(d))
        if kv_of is not None:
            rec["kv_head"] = int(kv_of[maps.head_ids[hi]])
    return HeadsPublic(
        run_id=run.id, heads=table, distance_per_layer=dist.per_layer.tolist(), distance_unit=dist.unit, probe=note
    )


def _profile(model: str, ev: Evolution) -> EvolutionProfile:
    return EvolutionProfile(
        model=model,
        layer_entropy=ev.layer_entropy.tolist(),
        layer_norm_entropy=ev.layer_norm_entropy.tolist(),
        layer_top1=ev.layer_top1.tolist(),
        head_entropy=ev.head_entropy.tolist(),
        head_norm_entropy=ev.head_norm_entropy.tolist(),
        head_effective_keys=ev.head_effective_keys.tolist(),
        head_top1=ev.head_top1.tolist(),
        slope=float(ev.slope),
        js_next=ev.js_next.tolist(),
        cosine_next=ev.cosine_next.tolist(),
    )


@router.get(
    "/{run_id}/evolution",
    response_model=EvolutionPublic,
    summary="Entropy, sharpening and layer-to-layer similarity; optionally beside another run",
)
@heavy
def read_evolution(
    run: RunDep,
    service: ServiceDep,
    ticket: TicketDep,
    compare_to: Annotated[
        str | None, Query(description="id of another run (e.g. the same text on another model) to show side by side")
    ] = None,
) -> EvolutionPublic:
    if compare_to is None:
        maps = run.capture.maps
        red = service.structure.get(run, ticket=ticket)  # entropy, top-1 (and head means within MEAN_BYTES)
        similarity = None
        if red.head_mean is None:  # a long run: the layers' similarity from the walk over the head means
            walk = service.structure.walk(run, _walk_rows(maps), ticket)
            similarity = (walk.js_next, walk.cosine_next)
        ev = evolution_from(red, maps, similarity)
        return EvolutionPublic(run_id=run.id, profile=_profile(run.model, ev))
    other = service.store.get(compare_to) or service.restore(compare_to)  # as GET /runs/{id} does
    if other is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no run with id {compare_to!r} to compare with; create it first"
        )
    cmp = compare(run.capture.maps, other.capture.maps)
    tolist = lambda a: None if a is None else a.tolist()  # noqa: E731
    return EvolutionPublic(
        run_id=run.id,
        profile=_profile(run.model, cmp.a),
        compare=_profile(other.model, cmp.b),
        compare_run_id=other.id,
        match_layer=cmp.match_b.tolist(),
        js_between=tolist(cmp.js_ab),
        cosine_between=tolist(cmp.cosine_ab),
    )


def _row(row: str, n: int) -> int | None:
    if row == "cls":
        return -1
    if row == "mean":
        return None
    try:
        value = int(row)
    except ValueError:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"row={row!r}: use 'cls', 'mean' or a position 0..{n - 1}"
        ) from None
    return check_index("row", value, n, "this run", "positions")


def _importance(run, imp, method: str, maps, cap: int | None = None) -> ImportancePublic:
    return ImportancePublic(
        run_id=run.id,
        method=method,
        row=imp.row,
        tokens=list(run.capture.maps.tokens),
        values=imp.values.tolist(),
        grid=None if imp.grid is None else imp.grid.tolist(),
        max_tokens=cap,
        through_layer=int(maps.layer_ids[-1]),
    )


LAYER = Annotated[
    int | None,
    Query(
        ge=0,
        le=63,
        description="through this layer (0-based): what that layer's output draws on; default: the last layer",
    ),
]


def _through(maps, layer: int | None):
    """The maps of layers 0..layer (all of them when ``layer`` is None), or a 422."""
    if layer is None:
        return maps
    check_index("layer", layer, maps.n_layers, "this run")
    return maps.select(layers=range(layer + 1))


@router.get(
    "/{run_id}/rollout", response_model=ImportancePublic, summary="Attention rollout as token (and pixel) importance"
)
@heavy
def read_rollout(
    run: RunDep, service: ServiceDep, ticket: TicketDep, row: ROW = "cls", layer: LAYER = None
) -> ImportancePublic:
    maps = _through(run.capture.maps, layer)
    r = _row(row, maps.n_tokens)
    mean = service.structure.mean_for(run, ticket)  # [layer, query, key] of the shared pass, or None (long runs)
    if mean is not None:
        return _importance(run, rollout_importance(maps, r, head_mean=mean[: maps.n_layers]), "rollout", maps)
    # a long run: the rollout through every layer from one walk over the head means (two layers kept)
    target = default_row(maps) if r == -1 else r
    rows = _walk_rows(maps) if target in _walk_rows(maps) else (target,)
    walk = service.structure.walk(run, rows, ticket)
    values = walk.rollout[target][maps.n_layers - 1]
    return _importance(run, rollout_of_values(maps, values, target), "rollout", maps)


def _walk_rows(maps) -> tuple:
    """The rollout rows one walk computes by default: the output row and the mean over rows."""
    return tuple(dict.fromkeys((default_row(maps), None)))


@router.get(
    "/{run_id}/flow",
    response_model=ImportancePublic,
    summary=f"Attention flow (max-flow; inputs up to {MAX_FLOW_TOKENS} tokens)",
)
@heavy
def read_flow(run: RunDep, row: ROW = "cls", layer: LAYER = None) -> ImportancePublic:
    maps = _through(run.capture.maps, layer)
    if maps.n_tokens > MAX_FLOW_TOKENS:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"attention flow is limited to {MAX_FLOW_TOKENS} tokens (one max-flow per token pair); "
            f"this run has {maps.n_tokens}. Use /rollout or a shorter text.",
        )
    r = _row(row, maps.n_tokens)
    target = default_row(maps) if r == -1 else r
    flow = attention_flow(maps, rows=None if target is None else [target])
    return _importance(run, flow.importance(target), "flow", maps, MAX_FLOW_TOKENS)


def _held_run(run_id: str, service) -> str:
    """``run_id`` when the run is in memory (the status routes never restore a run: they are polled), else 404."""
    if service.store.get(run_id) is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"no run with id {run_id!r} in memory (its structure pass is made when a structure route reads it)",
        )
    return run_id


def _pass_public(run_id: str, st) -> StructurePassPublic:
    return StructurePassPublic(run_id=run_id, state=st.state, done=st.done, total=st.total, waiting=st.waiting)


@router.get(
    "/{run_id}/structure-pass",
    response_model=StructurePassPublic,
    summary="Progress of the run's shared structure pass (cheap; for polling)",
)
def read_structure_pass(run_id: str, service: ServiceDep) -> StructurePassPublic:
    return _pass_public(run_id, service.structure.status(_held_run(run_id, service)))


@router.post(
    "/{run_id}/structure-pass/cancel",
    response_model=StructurePassPublic,
    summary="Cancel the run's structure pass: the requests waiting on it answer 409",
    description="The pass in flight stops at its next band of rows; every structure request of this run waiting "
    "on it answers 409. A structure request made afterwards starts a new pass. Answers the status before the "
    "cancel (idle or done: there was nothing to stop).",
)
def cancel_structure_pass(run_id: str, service: ServiceDep) -> StructurePassPublic:
    return _pass_public(run_id, service.structure.cancel(_held_run(run_id, service)))
