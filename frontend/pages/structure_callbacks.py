"""Callbacks of the structure page (``dash.callback``); data from the API over HTTP only."""

from __future__ import annotations

import numpy as np
from dash import Input, Output, State, callback, dcc

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.figures import head_detail_figure
from attnscope.frontend.pages.explore_callbacks import _empty, client
from attnscope.frontend.structure_figures import (
    evolution_figure,
    grid_importance_figure,
    head_entropy_figure,
    importance_figure,
    kernel_figure,
    shift_grid_figure,
)

NO_RUN = "Run a text on the Explore page first; this page analyses that run."


@callback(Output("structure-run", "children"), Input("run-store", "data"))
def describe_run(run):
    if not run:
        return NO_RUN
    text = run["text"] if len(run["text"]) < 120 else run["text"][:117] + "…"
    return f"Run {run['id']} · {run['model']} · {run['shape'][0]} layers × {run['shape'][1]} heads · “{text}”"


@callback(
    Output("shift-grid", "figure"),
    Output("shift-data", "data"),
    Input("run-store", "data"),
    Input("shift-k", "value"),
    Input("shift-threshold", "value"),
)
def render_shift(run, k, threshold):
    if not run:
        return _empty(NO_RUN), None
    try:
        data = client().shift(run["id"], k=int(k or 8), threshold=float(0.5 if threshold is None else threshold))
    except ApiError as exc:
        return _empty(str(exc)), None
    fig = shift_grid_figure(data["shift_score"], data["best_offset"], data["best_mass"])
    keep = {key: data[key] for key in ("kernel", "offsets", "kernel_shape", "r2", "shift_score")}
    return fig, keep


@callback(
    Output("kernel-figure", "figure"),
    Output("kernel-head-map", "figure"),
    Input("shift-grid", "clickData"),
    Input("shift-data", "data"),
    State("run-store", "data"),
)
def render_kernel(click, shift, run):
    if not run or not shift:
        return _empty("Click a head in the shift grid."), _empty("")
    if click and click.get("points"):
        point = click["points"][0]
        layer, head = int(point["y"][1:]), int(point["x"][1:])
    else:  # default: the strongest shift head
        score = np.asarray(shift["shift_score"])
        layer, head = (int(i) for i in np.unravel_index(score.argmax(), score.shape))
    label = f"L{layer}H{head}"
    kfig = kernel_figure(
        shift["kernel"][layer][head], shift["offsets"], shift["kernel_shape"], label, shift["r2"][layer][head]
    )
    try:
        weights = client().attention(run["id"], layer, head, encoding="json")
    except ApiError as exc:
        return kfig, _empty(str(exc))
    return kfig, head_detail_figure(weights, run["tokens"], f"{label} · its map")


@callback(Output("compare-model", "options"), Input("run-store", "data"))
def compare_options(run):
    try:
        models = client().models().models
    except ApiError:
        return []
    current = run["model"] if run else None
    return [{"label": m.name, "value": m.name} for m in models if m.name != current and m.modality == "text"]


@callback(
    Output("evolution-figure", "figure"),
    Output("entropy-heatmap", "figure"),
    Output("evolution-error", "children"),
    Input("run-store", "data"),
    Input("compare-model", "value"),
)
def render_evolution(run, other_model):
    if not run:
        return _empty(NO_RUN), _empty(""), ""
    error = ""
    try:
        other_id = None
        if other_model:
            try:
                other_id = client().create_run(other_model, run["text"]).id
            except ApiError as exc:
                error = f"{other_model}: {exc}"
        data = client().evolution(run["id"], compare_to=other_id)
    except ApiError as exc:
        return _empty(str(exc)), _empty(""), str(exc)
    profiles = [data["profile"]] + ([data["compare"]] if data.get("compare") else [])
    return evolution_figure(profiles), head_entropy_figure(data["profile"]["head_norm_entropy"], run["model"]), error


@callback(Output("importance-layer", "options"), Output("importance-layer", "value"), Input("run-store", "data"))
def importance_layers(run):
    """One choice per layer; the last (what the model's output draws on) by default."""
    if not run:
        return [], None
    n = run["shape"][0]
    return [{"label": f"layer {l}" + (" (last)" if l == n - 1 else ""), "value": l} for l in range(n)], n - 1


@callback(
    Output("importance-figure", "figure"),
    Output("importance-note", "children"),
    Output("importance-grid", "children"),
    Input("run-store", "data"),
    Input("importance-layer", "value"),
)
def render_importance(run, layer):
    if not run:
        return _empty(NO_RUN), "", None
    try:
        roll = client().importance(run["id"], "rollout", layer=layer)
    except ApiError as exc:
        return _empty(str(exc)), "", None
    series = {"rollout": roll["values"]}
    note = (
        f"Output position: {'[CLS]-like row ' + str(roll['row']) if roll['row'] is not None else 'mean over rows'}"
        f", through layer {roll['through_layer']}."
    )
    try:
        series["flow"] = client().importance(run["id"], "flow", layer=layer)["values"]
    except ApiError as exc:
        note += f" Flow not shown: {exc}"
    grid = None
    if roll.get("grid"):
        grid = dcc.Graph(
            figure=grid_importance_figure(roll["grid"], "Rollout over the image grid"), config={"displaylogo": False}
        )
    return importance_figure(run["tokens"], series), note, grid
