"""Callbacks of the structure page (``dash.callback``); data from the API over HTTP only."""

from __future__ import annotations

import re

import numpy as np
from dash import Input, Output, State, callback, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.pages.explore_views import detail_figure
from attnscope.frontend.pages.explore_writes import map_run
from attnscope.frontend.pages.structure_progress import running
from attnscope.frontend.plot_config import graph_config
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.run_state import NO_RUN, RUN_PARAMS, is_new, resolve_record, run_query, run_record
from attnscope.frontend.sink_hiding import HIDES
from attnscope.frontend.structure_figures import (
    evolution_figure,
    grid_importance_figure,
    head_entropy_figure,
    importance_figure,
    kernel_figure,
    shift_grid_figure,
)
from attnscope.frontend.url_state import Param, query_string, register_url_sync
from attnscope.frontend.writes_layout import MAP_KINDS

PARAMS = {
    **RUN_PARAMS,
    "k": Param(int, default=8, lo=1, hi=64),
    "threshold": Param(float, default=0.5, lo=0, hi=1),
    "head": Param(str, max_len=12),
    "hide": Param(str, default="none", choices=HIDES),
    "compare": Param(str, max_len=100),
    "through": Param(int, lo=0, hi=1000),
    "map": Param(str, default="attention", choices=MAP_KINDS),  # the map panels' kind (structure_maps)
}
LONG_RUN = 512  # tokens beyond which the page says what its first load costs
HEAD_LABEL = re.compile(r"^L(\d+)H(\d+)$")
register_url_sync("structure")


@callback(
    Output("structure-run-data", "data"),
    Output("structure-run", "children"),
    Output("structure-error", "children"),
    Output("run-store", "data", allow_duplicate=True),
    Input("structure-query", "data"),
    Input("structure-retry", "n_clicks"),
    State("run-store", "data"),
    prevent_initial_call="initial_duplicate",
)
def resolve(query, _retry, stored):
    """The run this page analyses: the address's, else the session's (made again if the API forgot it)."""
    query = query or {}
    run, message = resolve_record(client(), query.get("run"), query.get("model"), query.get("text"), stored)
    if run is None:
        failed = message != NO_RUN
        return None, NO_RUN if failed else message, message if failed else "", no_update
    text = run.text if len(run.text) < 120 else run.text[:117] + "…"
    about = f"Run {run.id} · {run.model} · {run.n_layers} layers × {run.n_heads} heads · “{text}”"
    about += f" — {message}" if message else ""
    if run.n_tokens > LONG_RUN:
        about += (
            f" — a long run ({run.n_tokens:,} tokens): the analyses below share one pass over its "
            f"{run.n_layers * run.n_heads} maps of {run.n_tokens:,}² weights, made once; each panel shows its busy "
            "state until its figure arrives"
        )
    return run.to_store(), about, "", (run.to_store() if is_new(run, stored) else no_update)


@callback(
    Output("shift-grid", "figure"),
    Output("shift-data", "data"),
    Input("structure-maps-data", "data"),
    Input("shift-k", "value"),
    Input("shift-threshold", "value"),
    running=running("shift"),
)
def render_shift(data, k, threshold):
    run = stored_run(data)
    if not run:
        return empty_figure(NO_RUN), None
    try:
        data = client().shift(run.id, k=int(k or 8), threshold=float(0.5 if threshold is None else threshold))
    except ApiError as exc:
        return empty_figure(f"Shift analysis failed: {exc.detail}"), None
    fig = shift_grid_figure(data.shift_score, data.best_offset, data.best_mass)
    keep = data.model_dump(include={"kernel", "offsets", "kernel_shape", "r2", "shift_score"})
    return fig, keep


def pick_head(click, wanted: str | None, score) -> tuple[int, int, str]:
    """``(layer, head, note)``: the clicked cell, else the address's ``head`` (``L2H3``) when it is in
    range, else the strongest shift head; ``note`` says when the address's head was not usable."""
    score = np.asarray(score)
    if click and click.get("points"):
        point = click["points"][0]
        return int(point["y"][1:]), int(point["x"][1:]), ""
    note = ""
    if wanted:
        m = HEAD_LABEL.match(wanted)
        if m and int(m[1]) < score.shape[0] and int(m[2]) < score.shape[1]:
            return int(m[1]), int(m[2]), ""
        note = f"head={wanted} is not a head of this model (L0H0 … L{score.shape[0] - 1}H{score.shape[1] - 1}); "
    layer, head = (int(i) for i in np.unravel_index(score.argmax(), score.shape))
    return layer, head, note + "showing the strongest shift head"


@callback(
    Output("kernel-figure", "figure"),
    Output("structure-head", "data"),
    Input("shift-grid", "clickData"),
    Input("shift-data", "data"),
    State("structure-run-data", "data"),
    State("structure-query", "data"),
    running=running("kernel"),
)
def render_kernel(click, shift, data, query):
    """The picked head's implied kernel, from the shift pass's data (no request); the head's own map
    follows in its own callback (``render_head_map``): at 4,096 tokens its slice may wait for a heavy
    worker while evolution and rollout hold both, and the kernel need not wait with it."""
    run = stored_run(data)
    if not run or not shift:
        return empty_figure("Click a head in the shift grid."), no_update
    layer, head, note = pick_head(click, (query or {}).get("head"), shift["shift_score"])
    label = f"L{layer}H{head}"
    kfig = kernel_figure(
        shift["kernel"][layer][head], shift["offsets"], shift["kernel_shape"], label, shift["r2"][layer][head]
    )
    if note and "not a head" in note:
        kfig.add_annotation(text=note, showarrow=False, xref="paper", yref="paper", x=0, y=1.12, xanchor="left")
    return kfig, label


@callback(
    Output("kernel-head-map", "figure"),
    Input("structure-head", "data"),
    Input("structure-hide", "value"),
    State("structure-run-data", "data"),
    State("structure-map-kind", "value"),
)
def render_head_map(label, hide, data, kind):
    """The picked head's own map, pooled like Explore's detail (at most 256 cells a side, max-pooled): a
    full 1,524-token map as JSON was slow and Plotly's resampling of it drew a blank; ``hide`` takes the
    sink's column away (a decoder's map is otherwise one bright column on the first token), stated in
    the title."""
    run = stored_run(data)
    m = HEAD_LABEL.match(label or "")
    if not run or not m:
        return empty_figure("")
    hide = hide if hide in HIDES else "none"
    return detail_figure(client(), run, int(m[1]), int(m[2]), {}, "global", hide, kind)


@callback(Output("compare-model", "options"), Input("structure-run-data", "data"))
def compare_options(data):
    run = stored_run(data)
    try:
        models = client().models().models
    except ApiError:
        return []
    current = run.model if run else None
    return [{"label": m.name, "value": m.name} for m in models if m.name != current and m.modality == "text"]


@callback(
    Output("evolution-figure", "figure"),
    Output("entropy-heatmap", "figure"),
    Output("evolution-error", "children"),
    Input("structure-maps-data", "data"),
    Input("compare-model", "value"),
    State("structure-map-kind", "value"),
    running=running("evolution"),
)
def render_evolution(data, other_model, kind):
    run = stored_run(data)
    if not run:
        return empty_figure(NO_RUN), empty_figure(""), ""
    error = ""
    try:
        other_id = None
        if other_model:
            try:  # the other model's maps of the same kind
                other = run_record(client().create_run(other_model, run.text))
                other_id = map_run(client(), other, kind).id
            except ApiError as exc:
                error = f"{other_model}: {exc.detail}"
        data = client().evolution(run.id, compare_to=other_id)
    except ApiError as exc:
        return empty_figure(str(exc)), empty_figure(""), str(exc)
    profiles = [data.profile] + ([data.compare] if data.compare else [])
    return evolution_figure(profiles), head_entropy_figure(data.profile.head_norm_entropy, run.model), error


@callback(
    Output("importance-layer", "options"),
    Output("importance-layer", "value"),
    Input("structure-run-data", "data"),
    State("structure-query", "data"),
)
def importance_layers(data, query):
    """One choice per layer; the address's ``through``, else the last (what the model's output draws on)."""
    run = stored_run(data)
    if not run:
        return [], None
    n = run.n_layers
    wanted = (query or {}).get("through")
    value = wanted if wanted is not None and 0 <= wanted < n else n - 1
    return [{"label": f"layer {l}" + (" (last)" if l == n - 1 else ""), "value": l} for l in range(n)], value


@callback(
    Output("importance-figure", "figure"),
    Output("importance-note", "children"),
    Output("importance-grid", "children"),
    Input("structure-maps-data", "data"),
    Input("importance-layer", "value"),
    running=running("importance"),
)
def render_importance(data, layer):
    from dash import dcc

    run = stored_run(data)
    if not run:
        return empty_figure(NO_RUN), "", None
    try:
        roll = client().importance(run.id, "rollout", layer=layer)
    except ApiError as exc:
        return empty_figure(f"Rollout failed: {exc.detail}"), "", None
    series = {"rollout": roll.values}
    note = (
        f"Output position: {'[CLS]-like row ' + str(roll.row) if roll.row is not None else 'mean over rows'}"
        f", through layer {roll.through_layer}."
    )
    try:
        series["flow"] = client().importance(run.id, "flow", layer=layer).values
    except ApiError as exc:
        note += f" Flow not shown: {exc.detail}"
    grid = None
    if roll.grid:
        grid = dcc.Graph(
            figure=grid_importance_figure(roll.grid, "Rollout over the image grid"),
            config=graph_config("attnscope-rollout-grid"),
        )
    return importance_figure(run.tokens, series), note, grid


@callback(
    Output("structure-url", "data"),
    Input("structure-run-data", "data"),
    Input("shift-k", "value"),
    Input("shift-threshold", "value"),
    Input("structure-head", "data"),
    Input("structure-hide", "value"),
    Input("compare-model", "value"),
    Input("importance-layer", "value"),
    Input("structure-map-kind", "value"),
    prevent_initial_call=True,
)
def to_address(data, k, threshold, head, hide, compare, through, kind):
    run = stored_run(data)
    last = run.n_layers - 1 if run else None
    values = {
        **run_query(run),
        "k": k,
        "threshold": threshold,
        "head": head,
        "hide": hide,
        "compare": compare,
        "through": None if through == last else through,
        "map": kind,
    }
    return query_string(values, PARAMS)
