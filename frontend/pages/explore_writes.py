"""Explore's callbacks for what heads write: the map kind of the head views (``map_run``: the run whose
maps the detail reads; ``grid_run``: the thumbnails'), the bar of each head's share of the
prediction's direct logit attribution beside the model view (fetched when asked: one recorded forward
of the run, kept by the API for the later requests; it follows the prediction position once shown),
the head selected in the grid outlined on it and named in its title (in the browser: no request), the
selected head's split over its source tokens as coloured text (a click on a bar selects that head
in the grid), and the contribution graph of the prediction, fetched again when the threshold or the
prediction position moves, with the lens of a clicked node's position (cleared when the graph's
position or run changes). The lens grid of a position is in ``explore_lens.py``."""

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
    is pressed, drawn again when the position changes while it is shown; a new run clears it, the
    page's run data set again with the shown run (the address read once more) keeps it."""
    run = stored_run(data)
    if not run or not run.causal:
        return empty_figure(ASK_DLA), None, ""
    triggers = set(ctx.triggered_prop_ids.values())
    pos = prediction_position(run, position)
    same_run = isinstance(shown, dict) and shown.get("run") == run.id
    if triggers and triggers <= {"explore-run-data", "prediction-position"}:
        if same_run and shown.get("position") == pos:
            return no_update, no_update, no_update
        if not same_run:
            return (empty_figure(ASK_DLA), None, "") if "explore-run-data" in triggers else (no_update,) * 3
    elif not triggers & {"writes-button", "dla-button"}:
        return empty_figure(ASK_DLA), None, ""
    try:
        att = client().attribution(run.id, position=pos, top_heads=0)
    except ApiError as exc:
        return empty_figure(str(exc)), None, str(exc)
    fig = dla_figure(att)
    # the title and every head's part travel with it: the selected head's outline and title line are drawn in
    # the browser (the clientside callback below) without asking for the attribution again
    shown = {"run": run.id, "position": att.position, "target": att.target, "title": fig.layout.title.text}
    return fig, shown | {"heads": att.heads}, ""


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


# the head selected in the grid (a thumbnail, the keyboard, the address, a bar) outlined on the DLA bar and
# named in its title with its share, part and rank among every head; in the browser, from the parts the bar
# was drawn with: a selection asks for nothing (the split below asks for its own head)
clientside_callback(
    """function (selected, shown, fig) {
        var nu = window.dash_clientside.no_update;
        if (!fig || !fig.data || !fig.data.length || !shown || !shown.heads || !shown.title) { return nu; }
        var bar = fig.data[0], rows = bar.customdata || [];
        var on = selected && selected.run === shown.run ? [Number(selected.layer), Number(selected.head)] : null;
        var part = on && shown.heads[on[0]] ? shown.heads[on[0]][on[1]] : undefined;
        if (typeof part !== "number") { on = null; }
        var widths = rows.map(function (c) { return on && c[0] === on[0] && c[1] === on[1] ? 3 : 0; });
        var title = shown.title;
        if (on) {
            var total = 0, rank = 1;
            shown.heads.forEach(function (row) { row.forEach(function (v) {
                total += Math.abs(v);
                if (Math.abs(v) > Math.abs(part)) { rank += 1; }
            }); });
            var share = total > 0 ? 100 * part / total : 0;
            title += "<br><sub>selected L" + on[0] + "H" + on[1] + ": " + share.toFixed(1) + " % of the heads' " +
                "direct write, part " + (part >= 0 ? "+" : "") + part.toFixed(3) + ", rank " + rank + " by |part|" +
                (widths.indexOf(3) >= 0 ? " (outlined)" : " (not among the bars)") + "</sub>";
        }
        var line = (bar.marker && bar.marker.line) || {};
        var layout = fig.layout || {};
        if (JSON.stringify(line.width) === JSON.stringify(widths) && layout.title && layout.title.text === title) {
            return nu;
        }
        var data = fig.data.slice();
        data[0] = Object.assign({}, bar, {marker: Object.assign({}, bar.marker,
            {line: Object.assign({}, line, {width: widths})})});
        return Object.assign({}, fig, {data: data, layout: Object.assign({}, layout,
            {title: Object.assign({}, layout.title, {text: title})})});
    }""",
    Output("writes-dla", "figure", allow_duplicate=True),
    Input("selected-head", "data"),
    Input("dla-store", "data"),
    State("writes-dla", "figure"),
    prevent_initial_call=True,
)


def threshold_value(value) -> float:
    """The range input's value as a threshold in ``[0.01, 0.5]`` (a range input may send text)."""
    try:
        return min(0.5, max(0.01, round(float(value), 2)))
    except (TypeError, ValueError):
        return GRAPH_THRESHOLD


def graph_step(triggers: set, run: RunRecord | None, clicks, position: int | None, drawn) -> str:
    """What the contribution graph does on an update: ``"keep"`` it (the page's run data set again with
    the drawn graph's run, the position menu set to the drawn position, or moved while no graph of this
    run is drawn), ``"clear"`` it (no causal run, another run, the button not pressed yet) or ``"draw"``
    it (the button, the threshold, or the position menu moved while a graph of this run is drawn).
    ``triggers``: the ids that fired; ``drawn``: ``writes-graph-of`` (``{run, position}`` or None);
    ``position``: the menu's position (``prediction_position``)."""
    same_run = run is not None and isinstance(drawn, dict) and drawn.get("run") == run.id
    if triggers and triggers <= {"explore-run-data", "prediction-position"}:
        if same_run:
            return "keep" if drawn.get("position") == position else "draw"
        return "clear" if "explore-run-data" in triggers else "keep"
    if not run or not run.causal or not clicks:
        return "clear"
    return "draw"


@callback(
    Output("writes-graph", "figure"),
    Output("writes-graph-error", "children"),
    Output("writes-threshold-value", "children"),
    Output("writes-graph-of", "data"),
    Output("writes-node-lens", "figure", allow_duplicate=True),
    Input("writes-button", "n_clicks"),
    Input("writes-threshold", "value"),
    Input("explore-run-data", "data"),
    Input("prediction-position", "value"),
    State("writes-graph-of", "data"),
    prevent_initial_call="initial_duplicate",
)
def contribution_graph(clicks, threshold, data, position, drawn):
    """The graph of the prediction after ``position`` at the threshold; drawn once the button was
    pressed for this run, again on every move of the threshold or of the position menu (``graph_step``).
    The page's run data set again with the same run (the address read once more) keeps the graph
    drawn; another run clears it. The node lens is cleared when the graph's run or position changes
    (its node may be in the graph no more), kept when only the threshold moves."""
    run = stored_run(data)
    t = threshold_value(threshold)
    shown = f"{t:.2f}"
    pos = prediction_position(run, position) if run else None
    step = graph_step(set(ctx.triggered_prop_ids.values()), run, clicks, pos, drawn)
    if step == "keep":
        return no_update, no_update, no_update, no_update, no_update
    if step == "clear":
        return empty_figure(ASK), "", shown, None, empty_figure(CLICK)
    try:
        g = client().graph(run.id, position=pos, threshold=t)
    except ApiError as exc:
        return empty_figure(str(exc)), str(exc), shown, None, empty_figure(CLICK)
    of = {"run": run.id, "position": g.position}
    lens = no_update if isinstance(drawn, dict) and drawn == of else empty_figure(CLICK)
    return graph_figure(g), "", shown, of, lens


@callback(
    Output("writes-node-lens", "figure"),
    Input("writes-graph", "clickData"),
    State("explore-run-data", "data"),
    State("writes-graph-of", "data"),
)
def node_lens(click, data, drawn):
    """The logit lens of the clicked node's position, the node's layer marked. Only a click asks: the
    page's run data set again (the address read once more) leaves the lens shown, and the graph's
    callback clears it for another run or position."""
    run = stored_run(data)
    node = clicked_node(click)
    if not run or not run.causal or node is None or not isinstance(drawn, dict) or drawn.get("run") != run.id:
        return empty_figure(CLICK)
    kind, layer, pos = node
    try:
        lens = client().lens(run.id, positions=f"{pos}:{pos + 1}", k=1)
    except ApiError as exc:
        return empty_figure(str(exc))
    return lens_figure(lens, highlight=lens_layer(kind, layer))
