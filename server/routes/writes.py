"""What heads write on one run: its logit lens (``POST /runs/{id}/lens``), the direct logit
attribution of one prediction (``POST /runs/{id}/attribution``), its value-weighted maps served as
a run (``POST /runs/{id}/value-weighted``) and the contribution graph of one prediction (``POST
/runs/{id}/graph``); the work is in ``attnscope.pipelines.writes.readouts`` and ``.graph_run``. The
routes share one recorded forward per run (``service.recordings``, bounded in bytes)."""

from __future__ import annotations

from fastapi import APIRouter, status

from attnscope.analysis.slices import parse_range
from attnscope.models.interface import Capture
from attnscope.pipelines.writes.graph import GraphTooLargeError
from attnscope.pipelines.writes.graph_run import prediction_graph
from attnscope.pipelines.writes.readouts import (
    WritesInputError,
    attribution_of_run,
    lens_of_run,
    value_weighted_of_run,
)
from attnscope.pipelines.writes.recorded import record_writes, value_weighted_of_norms
from attnscope.server.deps import RunDep, ServiceDep
from attnscope.server.errors import ApiError, error_responses
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import (
    MAX_LENS_POSITIONS,
    AttributionCreate,
    AttributionPublic,
    GraphCreate,
    GraphEdge,
    GraphNode,
    GraphPublic,
    HeadSplit,
    LensCell,
    LensCreate,
    LensPublic,
    TokenProb,
    ValueWeightedPublic,
)
from attnscope.server.store import Run, run_key

router = APIRouter(prefix="/runs", tags=["writes"])
ERRORS = error_responses(
    404,
    {
        422: "the request does not fit the run or the model: a model with neither an LM head nor a classification "
        "head (an encoder that outputs an embedding; the detail names what it lacks), an image run, positions out of "
        "range or given for a classifier, more positions than the bound, a target or contrast that is not exactly one "
        "token (a classifier: not one of its classes), k beyond the vocabulary or the classes, a head out of range"
    },
)


def _invalid(exc: Exception) -> ApiError:
    return ApiError(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc))


def _token_ids(run: Run) -> list[int]:
    if run.capture.token_ids is None:
        raise WritesInputError("the logit lens and attribution read text runs; this run is an image")
    return list(run.capture.token_ids)


def _recording(service, run: Run, backend):
    """The run's recorded forward from the service's per-run cache (recorded on the first request).
    A derived run (an intervention's altered maps, value-weighted maps) is refused: recording it would
    run the clean model on its tokens and pair that forward with maps it did not make. (An altered
    run's value-weighted maps come from its own forward's value norms, ``Run.value_norms``.)"""
    if run.derived:
        raise WritesInputError(
            f"run {run.id} holds {run.derived}: the lens, attribution, graph and value-weighted routes run the "
            "model again on the run's tokens, which would read the clean forward, not these maps; call them on "
            "the original run"
        )

    def make():
        inp = backend.encode_image(run.image) if run.image is not None else backend.encode_ids(_token_ids(run))
        return record_writes(backend, inp)

    return lambda: service.recordings.get(run.id, make)


@router.post(
    "/{run_id}/lens",
    response_model=LensPublic,
    responses=ERRORS,
    summary="The logit lens of a run: each layer's residual stream at a range of positions read through the final "
    "norm and the unembedding (top-k tokens, and the probability and rank of a target token); for a classifier, "
    "the class lens: each layer's pooled stream read by the classification head",
)
@heavy
def create_lens(run: RunDep, body: LensCreate, service: ServiceDep) -> LensPublic:
    try:
        ids = _token_ids(run)
        n = len(ids)
        start, stop = (n - 1, n) if body.positions is None else parse_range(body.positions, n, "positions")
        if stop - start > MAX_LENS_POSITIONS:
            n_pos = stop - start
            raise WritesInputError(f"positions {start}:{stop} are {n_pos}; at most {MAX_LENS_POSITIONS} a request")
        backend = service.models.get(run.model)
        recording = _recording(service, run, backend)
        asked = body.positions is not None
        grid = lens_of_run(backend, ids, start, stop, body.k, body.target, recording, positions_asked=asked)
    except ValueError as exc:
        raise _invalid(exc) from None
    text = backend.tokenizer.decode if grid.labels is None else lambda c: grid.labels[c[0]]
    rows = grid.rows
    cells = [
        [
            LensCell(
                top=[
                    TokenProb(token_id=int(t), token=text([int(t)]), prob=float(p))
                    for t, p in zip(rows.top_ids[grid.cell(layer, i)], rows.top_probs[grid.cell(layer, i)])
                ],
                target_prob=float(rows.target_prob[grid.cell(layer, i)]),
                target_rank=int(rows.target_rank[grid.cell(layer, i)]),
                entropy=float(rows.entropy[grid.cell(layer, i)]),
            )
            for i in range(len(grid.positions))
        ]
        for layer in range(grid.layers)
    ]
    tid = grid.target_ids[0] if grid.asked else None
    return LensPublic(
        run_id=run.id,
        readout="token" if grid.labels is None else "class",
        pooled=None if grid.pooled is None else list(grid.pooled),
        layers=grid.layers,
        positions=list(grid.positions),
        tokens=[run.capture.maps.tokens[p] for p in grid.positions],
        target_id=tid,
        target=None if tid is None else text([tid]),
        cells=cells,
        first_top_layer=[grid.first_top_layer(i) for i in range(len(grid.positions))],
    )


@router.post(
    "/{run_id}/attribution",
    response_model=AttributionPublic,
    responses=ERRORS,
    summary="Direct logit attribution of one prediction of a run: the target logit (or a logit difference) split "
    "into the embedding, each head, each MLP and the biases with the final norm's scale frozen, and chosen heads' "
    "parts split over their source positions; for a classifier, a class logit (difference) with every norm's "
    "scale and the pooler's gain frozen",
)
@heavy
def create_attribution(run: RunDep, body: AttributionCreate, service: ServiceDep) -> AttributionPublic:
    try:
        ids = _token_ids(run)
        backend = service.models.get(run.model)
        split = None if body.split_heads is None else [tuple(h) for h in body.split_heads]
        res = attribution_of_run(
            backend,
            ids,
            body.position,
            body.target,
            body.contrast,
            split,
            body.top_heads,
            _recording(service, run, backend),
        )
    except ValueError as exc:
        raise _invalid(exc) from None
    att = res.attribution
    text = backend.tokenizer.decode if res.labels is None else lambda c: res.labels[c[0]]
    splits = [] if res.splits is None else res.splits
    last = res.position if res.pooled is None else len(ids) - 1  # a classifier's heads read every token
    return AttributionPublic(
        run_id=run.id,
        readout="token" if res.labels is None else "class",
        pooled=None if res.pooled is None else list(res.pooled),
        position=res.position,
        target_id=res.target_id,
        target=text([res.target_id]),
        contrast_id=res.contrast_id,
        contrast=None if res.contrast_id is None else text([res.contrast_id]),
        logit=att.logit,
        embed=att.embed,
        heads=att.heads.tolist(),
        attn_bias=att.attn_bias.tolist(),
        mlp=att.mlp.tolist(),
        bias=att.bias,
        norm_bias=None if att.norm_bias is None else att.norm_bias.tolist(),
        scale=att.scale,
        residual_error=att.residual_error,
        tokens=list(run.capture.maps.tokens[: last + 1]),
        splits=[
            HeadSplit(layer=a, head=b, part=float(att.heads[a, b]), sources=[float(x) for x in row])
            for (a, b), row in zip(res.split_heads, splits)
        ],
    )


@router.post(
    "/{run_id}/value-weighted",
    response_model=ValueWeightedPublic,
    responses=error_responses(
        404,
        {
            422: "the model has no anatomy entry (the detail names what is missing), or the run is itself derived "
            "and its forward's value norms were not kept (value-weighted maps): call it on the original run; an "
            "intervention's altered run is served from the altered forward's own values"
        },
    ),
    summary="The value-weighted maps of a run (Kobayashi et al. 2020: the norm of what each key adds, "
    "a_ij ||v_j W_O||, each row normalised to sum to 1), served as a run that every map route reads; for an "
    "intervention's altered run, the altered weights times the altered forward's own value norms",
)
@heavy
def create_value_weighted(run: RunDep, service: ServiceDep) -> ValueWeightedPublic:
    vw_id = run_key(run.model, f"value-weighted\x00{run.id}")
    stored = service.store.get(vw_id)
    if stored is None:
        try:
            if run.value_norms is not None:  # an altered run: the norms of the forward that made its maps
                maps = value_weighted_of_norms(run.capture.maps, run.value_norms)
            else:
                backend = service.models.get(run.model)
                inp = backend.encode_image(run.image) if run.image is not None else backend.encode_ids(_token_ids(run))
                maps = value_weighted_of_run(backend, inp, run.capture.maps, _recording(service, run, backend))
        except ValueError as exc:
            raise _invalid(exc) from None
        cap = Capture(maps, run.capture.output, None, token_ids=run.capture.token_ids, attention=run.capture.attention)
        derived = f"the value-weighted maps of run {run.id}"
        stored = service.store.put(
            Run(id=vw_id, model=run.model, text=run.text, capture=cap, image=run.image, derived=derived)
        )
    return ValueWeightedPublic(run_id=run.id, value_weighted_run_id=vw_id, shape=list(stored.capture.maps.shape))


@router.post(
    "/{run_id}/graph",
    response_model=GraphPublic,
    responses=error_responses(
        404,
        {
            422: "the request does not fit the run or the model: a model without a final norm and unembedding or "
            "not pre-norm, an image run, a position out of range, a target that is not one token, or a graph past "
            "max_nodes (the detail names the bound: raise the threshold)"
        },
    ),
    summary="The contribution graph of one prediction (Ferrando and Voita 2024): from the position at the top, the "
    "attention, residual and MLP edges whose importance reaches the threshold, found top-down, with each attention "
    "edge's head shares; and the target logit's direct parts per block",
)
@heavy
def create_graph(run: RunDep, body: GraphCreate, service: ServiceDep) -> GraphPublic:
    try:
        ids = _token_ids(run)
        backend = service.models.get(run.model)
        pg = prediction_graph(
            backend, ids, body.position, body.threshold, body.max_nodes, body.target, _recording(service, run, backend)
        )
    except (ValueError, GraphTooLargeError) as exc:
        raise _invalid(exc) from None
    g, att = pg.result.graph, pg.attribution
    tokens = run.capture.maps.tokens
    attention, mlp = pg.block_parts()
    return GraphPublic(
        run_id=run.id,
        position=pg.result.position,
        threshold=pg.result.threshold,
        max_nodes=pg.result.max_nodes,
        target_id=pg.target_id,
        target=backend.tokenizer.decode([pg.target_id]),
        nodes=[GraphNode(kind=k, layer=la, position=p, token=tokens[p]) for k, la, p in pg.nodes],
        edges=[
            GraphEdge(
                source=pg.index[s],
                target=pg.index[t],
                kind=kind,
                weight=w,
                heads=[float(x) for x in g.heads[(s, t)]] if kind == "attention" else None,
            )
            for s, t, kind, w in g.edges
        ],
        logit=att.logit,
        bias=att.bias,
        embed=att.embed,
        attention=attention,
        mlp=mlp,
    )
