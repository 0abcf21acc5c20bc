"""Explore's callbacks for what heads write: the map kind of the head views (``map_run``: the run whose
maps the detail reads; ``grid_run``: the thumbnails'), the bar of each head's share of the
prediction's direct logit attribution beside the model view (fetched when asked: one recorded forward
of the run, kept by the API for the later requests; it follows the prediction position once shown),
the selected head's split over its source tokens as coloured text (a click on a bar selects that head
in the grid), and the contribution graph of the prediction, fetched again when the threshold moves,
with the lens of a clicked node's position. The lens grid of a position is in ``explore_lens.py``."""

from __future__ import annotations

from dash import Input, Output, State, callback, clientside_callback, ctx, no_update

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.graph_figures import clicked_node, graph_figure, lens_layer
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.run_record import RunRecord, stored_run
from attnscope.frontend.source_split import split_text
from attnscope.frontend.writes_figures import dla_figure, lens_figure
from attnscope.frontend.writes_layout import GRAPH_THRESHOLD

HIDDEN = "llm-hidden"
ASK = "Press 'Explain the prediction'."
ASK_DLA = "Press 'Attribute the prediction' (or 'Explain the prediction')."
SPLIT_HINT = "Attribute the prediction, then click a bar or a head in the grid."
SPLIT_TITLE = "Source tokens of the selected head"
CLICK = "Click a node of the graph for its logit lens."


def map_run(api: ApiClient, run: RunRecord, kind: str | None) -> RunRecord:
    """``run`` itself for the attention weights; for ``value-weighted`` the run whose maps are its
    value-weighted maps (same tokens and shape; the API makes it once)."""
    if kind != "value-weighted":
        return run
    return run.model_copy(update={"id": api.value_weighted(run.id)})


def grid_run(api: ApiClient, run: RunRecord, kind: str | None) -> tuple[RunRecord, str | None]:
    """The run whose maps the model view's thumbnails show, and the note that says so: the
    value-weighted maps' run for ``value-weighted`` (badges stay the attention weights' census), else
    ``run``; a model whose maps cannot be value-weighted keeps the weights and says why."""
    if kind != "value-weighted":
        return run, None
    try:
        return map_run(api, run, kind), (
            "Thumbnails: value-weighted maps (each row normalised to sum to 1); head-type badges read the "
            "attention weights."
        )
    except ApiError as exc:
        return run, f"Thumbnails: attention weights (no value-weighted maps: {exc.detail})."


@callback(
    Output("writes-section", "className"),
    Output("dla-section", "className"),
    Input("explore-run-data", "data"),
)
def show_writes(data):
    run = stored_run(data)
    causal = bool(run and run.causal)
    return ("panel" if causal else f"panel {HIDDEN}"), ("panel dla-panel" if causal else f"panel {HIDDEN} dla-panel")


def prediction_position(run: RunRecord, position) -> int:
    """``position`` when it is one of the run's, else the last token."""
    n = run.n_tokens
    return int(position) if isinstance(position, int) and 0 <= position < n else n - 1


@callback(
    Output("writes-dla", "figure"),
    Output("dla-store", "data"),
    Output("dla-error", "children"),
    Input("writes-button", "n_clicks"),
    Input("dla-button", "n_clicks"),
    Input("explore-run-data", "data"),
    Input("prediction-position", "value"),
    State("dla-store", "data"),
    running=[(Output("dla-button", "disabled"), True, False)],
)
def attribute_prediction(_explain, _attribute, data, position, shown):
    """The DLA bar of the prediction after ``position`` (default the last token): drawn when a button
    is pressed, drawn again when the position changes while it is shown; a new run clears it."""
    run = stored_run(data)
    if not run or not run.causal:
        return empty_figure(ASK_DLA), None, ""
    trigger = ctx.triggered_id
    if trigger == "prediction-position":
        if not shown or shown.get("run") != run.id:
            return no_update, no_update, no_update
    elif trigger not in ("writes-button", "dla-button"):
        return empty_figure(ASK_DLA), None, ""
    pos = prediction_position(run, position)
    try:
        att = client().attribution(run.id, position=pos, top_heads=0)
    except ApiError as exc:
        return empty_figure(str(exc)), None, str(exc)
    return dla_figure(att), {"run": run.id, "position": att.position, "target": att.target}, ""


@callback(
    Output("dla-split", "children"),
    Output("dla-split-title", "children"),
    Input("selected-head", "data"),
    Input("dla-store", "data"),
    State("explore-run-data", "data"),
)
def head_split(selected, shown, data):
    """The selected head's part of the attributed logit, split over its source tokens."""
    run = stored_run(data)
    if not run or not shown or shown.get("run") != run.id or not selected:
        return SPLIT_HINT, SPLIT_TITLE
    layer, head = int(selected["layer"]), int(selected["head"])
    label = f"L{layer}H{head}"
    try:
        att = client().attribution(run.id, position=shown["position"], top_heads=0, split_heads=[[layer, head]])
    except ApiError as exc:
        return str(exc), SPLIT_TITLE
    split = att.splits[0]
    title = f"Source tokens of {label}: what each sent into {att.target!r} after position {att.position}"
    return split_text(label, split.part, att.tokens, split.sources), title


# a click on a bar of the DLA selects its head in the model view (the thumbnail's own click: the grid's
# outline, the head detail and the split follow it)
clientside_callback(
    """function (click) {
        var p = click && click.points && click.points[0];
        if (!p || !p.customdata) { return window.dash_clientside.no_update; }
        var sel = '#model-grid .head-thumb[data-layer="' + p.customdata[0] + '"][data-head="' + p.customdata[1] + '"]';
        var btn = document.querySelector(sel);
        if (btn) { btn.click(); }
        return p.customdata[0] + "," + p.customdata[1];
    }""",
    Output("dla-click-applied", "data"),
    Input("writes-dla", "clickData"),
    prevent_initial_call=True,
)


def threshold_value(value) -> float:
    """The range input's value as a threshold in ``[0.01, 0.5]`` (a range input may send text)."""
    try:
        return min(0.5, max(0.01, round(float(value), 2)))
    except (TypeError, ValueError):
        return GRAPH_THRESHOLD


@callback(
    Output("writes-graph", "figure"),
    Output("writes-graph-error", "children"),
    Output("writes-threshold-value", "children"),
    Output("writes-graph-of", "data"),
    Input("writes-button", "n_clicks"),
    Input("writes-threshold", "value"),
    Input("explore-run-data", "data"),
    State("prediction-position", "value"),
    State("writes-graph-of", "data"),
)
def contribution_graph(clicks, threshold, data, position, drawn):
    """The graph of the prediction after ``position`` at the threshold; drawn once the button was
    pressed for this run, again on every move of the threshold. The page's run data set again with
    the same run (the address read once more) keeps the graph drawn; another run clears it."""
    run = stored_run(data)
    t = threshold_value(threshold)
    shown = f"{t:.2f}"
    if ctx.triggered_id == "explore-run-data" and run and isinstance(drawn, dict) and drawn.get("run") == run.id:
        return no_update, no_update, no_update, no_update
    if not run or not run.causal or not clicks or ctx.triggered_id == "explore-run-data":
        return empty_figure(ASK), "", shown, None
    try:
        g = client().graph(run.id, position=prediction_position(run, position), threshold=t)
    except ApiError as exc:
        return empty_figure(str(exc)), str(exc), shown, None
    return graph_figure(g), "", shown, {"run": run.id}


@callback(
    Output("writes-node-lens", "figure"),
    Input("writes-graph", "clickData"),
    Input("explore-run-data", "data"),
)
def node_lens(click, data):
    """The logit lens of the clicked node's position, the node's layer marked."""
    run = stored_run(data)
    node = clicked_node(click) if ctx.triggered_id == "writes-graph" else None
    if not run or not run.causal or node is None:
        return empty_figure(CLICK)
    kind, layer, pos = node
    try:
        lens = client().lens(run.id, positions=f"{pos}:{pos + 1}", k=1)
    except ApiError as exc:
        return empty_figure(str(exc))
    return lens_figure(lens, highlight=lens_layer(kind, layer))
