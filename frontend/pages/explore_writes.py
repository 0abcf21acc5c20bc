"""Explore's callbacks for what heads write: the panel of a causal LM run's prediction (its direct logit
attribution's top heads and its logit lens, fetched when the button is pressed: one recorded forward
of the run, kept by the API for the later requests) and the head detail's map kind (``map_run``: the
run whose maps the detail reads); the contribution graph of the prediction, fetched again when the
threshold moves, and the lens of a clicked node's position."""

from __future__ import annotations

from dash import Input, Output, State, callback, ctx, no_update

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.graph_figures import clicked_node, graph_figure, lens_layer
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.run_record import RunRecord, stored_run
from attnscope.frontend.writes_figures import dla_figure, lens_figure
from attnscope.frontend.writes_layout import GRAPH_THRESHOLD

HIDDEN = "panel llm-hidden"
ASK = "Press 'Explain the prediction'."
CLICK = "Click a node of the graph for its logit lens."


def map_run(api: ApiClient, run: RunRecord, kind: str | None) -> RunRecord:
    """``run`` itself for the attention weights; for ``value-weighted`` the run whose maps are its
    value-weighted maps (same tokens and shape; the API makes it once)."""
    if kind != "value-weighted":
        return run
    return run.model_copy(update={"id": api.value_weighted(run.id)})


@callback(Output("writes-section", "className"), Input("explore-run-data", "data"))
def show_writes(data):
    run = stored_run(data)
    return "panel" if run and run.causal else HIDDEN


@callback(
    Output("writes-dla", "figure"),
    Output("writes-lens", "figure"),
    Output("writes-error", "children"),
    Input("writes-button", "n_clicks"),
    Input("explore-run-data", "data"),
    State("prediction-position", "value"),
    running=[(Output("writes-button", "disabled"), True, False)],
)
def explain(_clicks, data, position):
    """The DLA bar and lens of the prediction after ``position`` (default the last token); a new run
    clears them until asked again."""
    run = stored_run(data)
    if not run or not run.causal:
        return empty_figure(ASK), empty_figure(ASK), ""
    if ctx.triggered_id != "writes-button":
        return empty_figure(ASK), empty_figure(ASK), ""
    pos = _position(run, position)
    api = client()
    try:
        att = api.attribution(run.id, position=pos, top_heads=1)
        lens = api.lens(run.id, positions=f"{pos}:{pos + 1}", k=1)
    except ApiError as exc:
        return no_update, no_update, str(exc)
    return dla_figure(att), lens_figure(lens), ""


def _position(run: RunRecord, position) -> int:
    n = run.n_tokens
    return int(position) if isinstance(position, int) and 0 <= position < n else n - 1


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
    Input("writes-button", "n_clicks"),
    Input("writes-threshold", "value"),
    Input("explore-run-data", "data"),
    State("prediction-position", "value"),
)
def contribution_graph(clicks, threshold, data, position):
    """The graph of the prediction after ``position`` at the threshold; drawn once the button was
    pressed for this run, again on every move of the threshold."""
    run = stored_run(data)
    t = threshold_value(threshold)
    shown = f"{t:.2f}"
    if not run or not run.causal or not clicks or ctx.triggered_id == "explore-run-data":
        return empty_figure(ASK), "", shown
    try:
        g = client().graph(run.id, position=_position(run, position), threshold=t)
    except ApiError as exc:
        return empty_figure(str(exc)), str(exc), shown
    return graph_figure(g), "", shown


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
