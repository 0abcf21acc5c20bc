"""Callbacks of the explore page (``dash.callback``); all data comes from the API over HTTP."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from dash import ALL, Input, Output, State, callback, ctx, html, no_update
from flask import current_app

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.figures import head_detail_figure, head_view_figure, thumbnail_src
from attnscope.frontend.llm_figures import (
    causal_thumbnail_src,
    column_label,
    group_starts,
    head_label,
    head_order,
    model_options,
)


def client() -> ApiClient:
    """The API client of the running Dash app (set up in ``create_dash_app``)."""
    return current_app.config["ATTNSCOPE_CLIENT"]


def _empty(message: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(
        xaxis={"visible": False},
        yaxis={"visible": False},
        height=320,
        plot_bgcolor="white",
        annotations=[{"text": message, "showarrow": False, "font": {"size": 14, "color": "#666"}}],
    )
    return fig


@callback(
    Output("model-dropdown", "options"),
    Output("model-dropdown", "value"),
    Output("api-status", "children"),
    Input("url", "pathname"),
)
def load_models(_pathname):
    try:
        listing = client().models()
    except ApiError as exc:
        return [], None, f"API unavailable: {exc}"
    options = model_options(listing.models, "text")  # grouped by task; vision models are on Vision
    return options, listing.default, f"API {client().base_url}"


@callback(
    Output("run-store", "data"),
    Output("run-error", "children"),
    Input("run-button", "n_clicks"),
    State("text-input", "value"),
    State("model-dropdown", "value"),
    prevent_initial_call=True,
)
def create_run(n_clicks, text, model):
    return run_text(n_clicks, model, text)


def run_text(n_clicks, model, text) -> tuple:
    """``(run-store data, error message)`` for a Run button: the run as the session's current run,
    or the API's message. Shared by every page that runs a text."""
    if not n_clicks:  # Dash Pages can fire a button's callback once when the page's layout is inserted
        return no_update, no_update
    if not model:
        return no_update, "Pick a model first."
    try:
        run = client().create_run(model, text or "")
    except ApiError as exc:
        return no_update, str(exc)
    return run.model_dump(exclude={"prediction"}), ""


BADGES = {
    "previous": "prev",
    "next": "next",
    "self": "self",
    "cls-sink": "CLS",
    "sep-sink": "SEP",
    "broad": "broad",
    "local": "local",
    "duplicate": "dup",
    "induction": "ind",
}


def badge_text(labels: list[str]) -> str:
    """Short badge for a head's type labels (shift-3 -> "-3", shift(+1,+0) -> "(+1,+0)")."""
    short = [BADGES.get(l.replace("_", "-")) or l.removeprefix("shift") for l in labels]
    return " ".join(short[:2])


def _thumb(layer: int, head: int, matrix: np.ndarray, labels: list[str], run: dict, cls: str) -> html.Button:
    label = head_label(layer, head, run.get("kv_head_of"))  # L3H4, or L3 H4 (kv 1) under grouped-query attention
    kinds = ", ".join(labels) if labels else "no type"
    src = causal_thumbnail_src(matrix) if run.get("causal") else thumbnail_src(matrix)
    children = [html.Img(src=src, alt=label)]
    if labels:
        children.append(html.Span(badge_text(labels), className="badge"))
    return html.Button(
        children,
        id={"type": "head-thumb", "layer": layer, "head": head},
        className=cls,
        title=f"{label} ({kinds}): click for detail",
        n_clicks=0,
    )


@callback(
    Output("model-grid", "children"),
    Output("layer-dropdown", "options"),
    Output("layer-dropdown", "value"),
    Output("head-checklist", "options"),
    Output("head-checklist", "value"),
    Output("selected-head", "data"),
    Input("run-store", "data"),
    prevent_initial_call=True,
)
def render_grid(run):
    if not run:
        return no_update, no_update, no_update, no_update, no_update, no_update
    n_layers, n_heads = run["shape"][0], run["shape"][1]
    try:
        layers = [client().attention(run["id"], layer) for layer in range(n_layers)]
    except ApiError as exc:
        return html.Div(str(exc), className="error"), [], None, [], [], None
    try:
        types = {(h.layer, h.head_index): h.labels for h in client().heads(run["id"]).heads}
    except ApiError:  # badges are a bonus: the grid still shows without them
        types = {}
    kv_of = run.get("kv_head_of")
    order, starts = head_order(n_heads, kv_of), group_starts(n_heads, kv_of)  # query heads grouped by kv head
    col = lambda h: column_label(h, kv_of)  # noqa: E731
    gap = lambda h, base: f"{base} kv-group-start" if h in starts else base  # noqa: E731
    header = html.Div(
        className="grid-row grid-header",
        children=[html.Span("", className="row-label")]
        + [html.Span(col(h), className=gap(h, "col-label")) for h in order],
    )
    rows = [header] + [
        html.Div(
            className="grid-row",
            children=[html.Span(f"L{l}", className="row-label")]
            + [_thumb(l, h, layers[l][h], types.get((l, h), []), run, gap(h, "head-thumb")) for h in order],
        )
        for l in range(n_layers)
    ]
    layer_opts = [{"label": f"layer {l}", "value": l} for l in range(n_layers)]
    head_opts = [{"label": col(h), "value": h} for h in order]
    return rows, layer_opts, 0, head_opts, list(range(n_heads)), {"layer": 0, "head": 0}


@callback(
    Output("selected-head", "data", allow_duplicate=True),
    Input({"type": "head-thumb", "layer": ALL, "head": ALL}, "n_clicks"),
    prevent_initial_call=True,
)
def select_head(clicks):
    trigger = ctx.triggered_id
    if not trigger or not any(clicks or []):
        return no_update
    return {"layer": trigger["layer"], "head": trigger["head"]}


@callback(Output("head-detail", "figure"), Input("selected-head", "data"), State("run-store", "data"))
def render_detail(selected, run):
    if not run or not selected:
        return _empty("Run a text, then click a head in the model view.")
    layer, head = selected["layer"], selected["head"]
    try:
        weights = client().attention(run["id"], layer, head, encoding="json")
    except ApiError as exc:
        return _empty(str(exc))
    return head_detail_figure(weights, run["tokens"], f"L{layer}H{head} · {run['model']}")


@callback(
    Output("head-view", "figure"),
    Input("layer-dropdown", "value"),
    Input("head-checklist", "value"),
    Input("run-store", "data"),
)
def render_head_view(layer, heads, run):
    if not run or layer is None:
        return _empty("The head view appears after a run.")
    if not heads:
        return _empty("Select at least one head.")
    try:
        weights = client().attention(run["id"], layer)
    except ApiError as exc:
        return _empty(str(exc))
    return head_view_figure(weights, run["tokens"], sorted(heads), layer)
