"""Callbacks of the interventions page (``dash.callback``); data from the API over HTTP only."""

from __future__ import annotations

from dash import Input, Output, State, callback, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.figures import head_detail_figure
from attnscope.frontend.intervention_figures import (
    effect_grid_figure,
    importance_scatter,
    parse_heads,
    prediction_summary,
)
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.run_state import NO_RUN, RUN_PARAMS, resolve_run, run_query
from attnscope.frontend.url_state import Param, query_string, register_url_sync

METHODS = ("zero", "mean", "uniform")
PARAMS = {
    **RUN_PARAMS,
    "heads": Param(str, max_len=400),
    "method": Param(str, default="zero", choices=METHODS),
}
register_url_sync("interventions")


@callback(
    Output("interventions-run-data", "data"),
    Output("interventions-run", "children"),
    Output("interventions-error", "children"),
    Output("run-store", "data", allow_duplicate=True),
    Input("interventions-query", "data"),
    Input("interventions-retry", "n_clicks"),
    State("run-store", "data"),
    prevent_initial_call="initial_duplicate",
)
def resolve(query, _retry, stored):
    """The run this page intervenes on: the address's, else the session's."""
    query = query or {}
    run, message = resolve_run(client(), query.get("run"), query.get("model"), query.get("text"), stored)
    if run is None:
        failed = message != NO_RUN
        return None, NO_RUN if failed else message, message if failed else "", no_update
    about = f"Run {run['id']} · {run['model']} · {run['shape'][0]} layers × {run['shape'][1]} heads"
    about += f" — {message}" if message else ""
    return run, about, "", (run if not stored or stored.get("id") != run["id"] else no_update)


@callback(
    Output("interventions-heads", "value"),
    Input("interventions-grid", "clickData"),
    State("interventions-heads", "value"),
    prevent_initial_call=True,
)
def toggle_head(click, text):
    """A click on a grid cell adds that head to the list (or takes it out)."""
    if not click or not click.get("points"):
        return no_update
    point = click["points"][0]
    label = f"{point['y']}{point['x']}"
    heads, _ = parse_heads(text)
    labels = [f"L{a}H{b}" for a, b in heads]
    labels = [x for x in labels if x != label] if label in labels else [*labels, label]
    return ", ".join(labels)


@callback(
    Output("interventions-result", "children"),
    Output("interventions-clean-map", "figure"),
    Output("interventions-altered-map", "figure"),
    Input("interventions-apply", "n_clicks"),
    Input("interventions-run-data", "data"),
    State("interventions-heads", "value"),
    State("interventions-method", "value"),
)
def apply(_clicks, run, text, method):
    """Ablate the listed heads together: the prediction before and after, the effects, and the first
    head's map before and after (the maps of the altered pass are served as a run)."""
    blank = empty_figure("Pick heads and press Apply.")
    if not run:
        return NO_RUN, blank, blank
    heads, problems = parse_heads(text)
    if problems:
        return "; ".join(problems), blank, blank
    if not heads:
        return "No heads yet: type some (L0H1, L3H2) or click cells of the effect grid.", blank, blank
    body = {"interventions": [{"kind": "ablate", "heads": heads, "method": method or "zero"}]}
    try:
        res = client().intervene(run["id"], body)
    except ApiError as exc:
        return f"The intervention was refused: {exc.detail}", blank, blank
    effects = " · ".join(f"Δ {k} {v:+.4f}" for k, v in res.effects.items())
    clean, altered = (prediction_summary(p.model_dump()) for p in (res.clean, res.altered))
    line = f"Before: {clean} → after: {altered} · {effects}"
    layer, head = heads[0]
    label = f"L{layer}H{head}"
    try:
        before = client().attention(run["id"], layer, head, encoding="json")
        after = client().attention(res.altered_run_id, layer, head, encoding="json")
    except ApiError as exc:
        return line, empty_figure(f"The maps could not be loaded: {exc.detail}"), blank
    return (
        line,
        head_detail_figure(before, run["tokens"], f"{label} · before"),
        head_detail_figure(after, run["tokens"], f"{label} · after the intervention"),
    )


@callback(
    Output("interventions-grid", "figure"),
    Output("interventions-importance", "figure"),
    Output("interventions-grid-note", "children"),
    Input("interventions-grid-button", "n_clicks"),
    State("interventions-run-data", "data"),
    State("interventions-method", "value"),
    State("interventions-heads", "value"),
    prevent_initial_call=True,
)
def grid(_clicks, run, method, text):
    if not run:
        return empty_figure(NO_RUN), empty_figure(""), ""
    try:
        res = client().head_effects(run["id"], {"method": method or "zero"})
    except ApiError as exc:
        return empty_figure(f"The grid failed: {exc.detail}"), empty_figure(""), ""
    heads, _ = parse_heads(text)
    top = res.top[0]
    note = (
        f"{len(res.effect)} × {len(res.effect[0])} heads in {res.seconds:.1f} s · largest effect "
        f"L{top.layer}H{top.head} (Δ {res.metric} {top.effect:+.4f})"
    )
    return effect_grid_figure(res.effect, res.metric, heads), importance_scatter(res.model_dump()), note


@callback(
    Output("interventions-url", "data"),
    Input("interventions-run-data", "data"),
    Input("interventions-heads", "value"),
    Input("interventions-method", "value"),
    prevent_initial_call=True,
)
def to_address(run, heads, method):
    """The page's state in its address (a pasted link reopens the same heads and ablation)."""
    return query_string({**run_query(run), "heads": heads or None, "method": method}, PARAMS)
