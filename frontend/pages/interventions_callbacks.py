"""Callbacks of the interventions page (``dash.callback``): the run, one intervention and the maps of
a later layer before and after it, cells of the maps as knockout edges, the page's address. The grid
and the patching plot are in ``interventions_patching``. Data from the API over HTTP only."""

from __future__ import annotations

import numpy as np
from dash import Input, Output, State, callback, ctx, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.figures import head_detail_figure
from attnscope.frontend.intervention_figures import parse_heads, prediction_summary
from attnscope.frontend.intervention_forms import (
    KINDS,
    METRICS,
    intervention_item,
    metric_fields,
    toggle_edge,
    touched_layer,
    view_layer,
)
from attnscope.frontend.map_kind import notes, shown_id
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.run_state import NO_RUN, RUN_PARAMS, resolve_run, run_query
from attnscope.frontend.sink_hiding import HIDES, hidden_positions, hide_map, hide_note, with_note
from attnscope.frontend.url_state import Param, query_string, register_url_sync
from attnscope.frontend.writes_layout import MAP_KINDS

METHODS = ("zero", "mean", "uniform")
PARAMS = {
    **RUN_PARAMS,
    "kind": Param(str, default="ablate", choices=KINDS),
    "heads": Param(str, max_len=400),
    "method": Param(str, default="zero", choices=METHODS),
    "edges": Param(str, max_len=800),
    "klayers": Param(str, max_len=200),
    "rlayer": Param(int, lo=0, hi=1023),
    "rpos": Param(str, max_len=400),
    "corrupted": Param(str),
    "direction": Param(str, default="noising", choices=("noising", "denoising")),
    "metric": Param(str, choices=METRICS),
    "ans_a": Param(str, max_len=64),
    "ans_b": Param(str, max_len=64),
    "vlayer": Param(int, lo=0, hi=1023),
    "vhead": Param(int, lo=0, hi=1023),
    "sweep": Param(bool, default=False),
    "hide": Param(str, default="none", choices=HIDES),
    "map": Param(str, default="attention", choices=MAP_KINDS),  # the map kind of the map before
}
FORM = [
    State("interventions-kind", "value"),
    State("interventions-heads", "value"),
    State("interventions-method", "value"),
    State("interventions-edges", "value"),
    State("interventions-klayers", "value"),
    State("interventions-rlayer", "value"),
    State("interventions-rpos", "value"),
]
METRIC_FORM = [
    State("interventions-metric", "value"),
    State("interventions-answer-a", "value"),
    State("interventions-answer-b", "value"),
    State("interventions-corrupted", "value"),
    State("interventions-direction", "value"),
]
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
    Output("interventions-view-head", "options"),
    Output("interventions-view-head", "value"),
    Input("interventions-run-data", "data"),
    State("interventions-query", "data"),
    State("interventions-view-head", "value"),
)
def view_heads(run, query, head):
    """The heads the maps can show, and the address's choice among them (set with the options: a
    dropdown drops a value its options do not hold yet)."""
    if not run:
        return [], None
    n_h = run["shape"][1]
    head = head if head is not None else (query or {}).get("vhead")
    return [{"label": f"H{i}", "value": i} for i in range(n_h)], (head if head is not None and head < n_h else None)


@callback(
    Output("interventions-heads", "value"),
    Output("interventions-kind", "value", allow_duplicate=True),
    Input("interventions-grid", "clickData"),
    State("interventions-heads", "value"),
    State("interventions-kind", "value"),
    prevent_initial_call=True,
)
def toggle_head(click, text, kind):
    """A click on a grid cell adds that head to the list (or takes it out)."""
    if not click or not click.get("points"):
        return no_update, no_update
    point = click["points"][0]
    label = f"{point['y']}{point['x']}"
    heads, _ = parse_heads(text)
    labels = [f"L{a}H{b}" for a, b in heads]
    labels = [x for x in labels if x != label] if label in labels else [*labels, label]
    return ", ".join(labels), (no_update if kind in ("ablate", "patch_heads") else "ablate")


@callback(
    Output("interventions-edges", "value"),
    Output("interventions-kind", "value", allow_duplicate=True),
    Output("interventions-klayers", "value"),
    Input("interventions-clean-map", "clickData"),
    State("interventions-edges", "value"),
    State("interventions-klayers", "value"),
    State("interventions-view-layer", "value"),
    prevent_initial_call=True,
)
def toggle_edge_cell(click, edges, klayers, shown):
    """A click on a cell of the map before the intervention adds that query -> key edge to the
    knockout (or takes it out); the knockout's layers default to the layer shown."""
    if not click or not click.get("points"):
        return no_update, no_update, no_update
    point = click["points"][0]
    edges = toggle_edge(edges, round(point["y"]), round(point["x"]))
    layers = klayers if (klayers or "").strip() else str(shown or 0)
    return edges, "knockout", layers


@callback(
    Output("interventions-altered", "data"),
    Output("interventions-result", "children"),
    Output("interventions-apply-error", "children"),
    Output("interventions-view-layer", "options"),
    Output("interventions-view-layer", "value"),
    Input("interventions-apply", "n_clicks"),
    Input("interventions-run-data", "data"),
    *FORM,
    *METRIC_FORM,
    State("interventions-view-layer", "value"),
    State("interventions-query", "data"),
)
def apply(
    _clicks,
    run,
    kind,
    heads,
    method,
    edges,
    klayers,
    rlayer,
    rpos,
    metric,
    ans_a,
    ans_b,
    corrupted,
    direction,
    shown,
    query,
):
    """One intervention: the prediction before and after and its effects, and the layer whose maps
    show it (its options set here too, so that an address's layer is not dropped); an error (the
    form's or the API's) is shown in red and the last result stays."""
    pressed = ctx.triggered_id == "interventions-apply"
    if not run:
        return None, NO_RUN, "", [], None
    n_l = run["shape"][0]
    layers = [{"label": f"L{i}", "value": i} for i in range(n_l)]
    if not pressed:  # the run is new: the address's layer, else the one shown
        shown = (query or {}).get("vlayer") if shown is None else shown
        shown = shown if shown is not None and shown < n_l else None
    item, problems = intervention_item(kind or "ablate", heads, method, edges, klayers, rlayer, rpos)
    fields, more = metric_fields(metric, ans_a, ans_b, corrupted, direction)
    problems += more
    if problems:
        if pressed:
            return no_update, no_update, "; ".join(problems), no_update, no_update
        return None, "Pick an intervention and press Apply.", "", layers, shown
    try:
        res = client().intervene(run["id"], {"interventions": [item], **fields})
    except ApiError as exc:
        error = f"The intervention was refused: {exc.detail}"
        return (no_update, no_update, error, no_update, no_update) if pressed else (None, "", error, layers, shown)
    effects = " · ".join(f"Δ {k} {v:+.4f}" for k, v in res.effects.items())
    clean, altered = (prediction_summary(p.model_dump()) for p in (res.clean, res.altered))
    touched = touched_layer(item)
    altered_of = {"run_id": run["id"], "altered_run_id": res.altered_run_id, "layer": touched, "kind": item["kind"]}
    line = f"Before: {clean} → after: {altered} · {effects}"
    return altered_of, line, "", layers, view_layer(shown, touched, n_l)


@callback(
    Output("interventions-clean-map", "figure"),
    Output("interventions-altered-map", "figure"),
    Output("interventions-map-note", "children"),
    Input("interventions-altered", "data"),
    Input("interventions-view-layer", "value"),
    Input("interventions-view-head", "value"),
    Input("interventions-hide", "value"),
    Input("interventions-map-kind", "value"),
    State("interventions-run-data", "data"),
)
def maps(altered, layer, head, hide, kind, run):
    """The shown head's map before and after the intervention (before only, to pick edges from,
    while there is no result), and how much of its weights changed; ``hide``: the keys blanked in both
    (rows renormalised over the rest, stated in the titles; the change is measured on the weights as
    they are); ``kind``: the map kind of both maps (after the intervention: the altered run's
    value-weighted maps, the altered weights times the altered forward's own value norms); the change
    line measures the weights."""
    blank = empty_figure("Apply an intervention to see the maps after it.")
    if not run:
        return empty_figure(NO_RUN), blank, ""
    layer, head = int(layer or 0), int(head or 0)
    label = f"L{layer}H{head}"
    try:
        shown, kind_note = shown_id(client(), run["id"], kind)
        drawn = client().attention(shown, layer, head, encoding="json")
        before = client().attention(run["id"], layer, head, encoding="json") if shown != run["id"] else drawn
        fresh = altered and altered.get("run_id") == run["id"]
        after = drawn_after = None
        if fresh:
            altered_id = altered["altered_run_id"]
            shown_after, after_note = shown_id(client(), altered_id, kind)
            drawn_after = client().attention(shown_after, layer, head, encoding="json")
            after = (
                client().attention(altered_id, layer, head, encoding="json")
                if shown_after != altered_id
                else drawn_after
            )
    except ApiError as exc:
        return empty_figure(f"The maps could not be loaded: {exc.detail}"), blank, ""
    hide = hide if hide in HIDES else "none"
    hidden = hidden_positions(hide, len(run["tokens"]), run.get("special") or [])
    note = hide_note(hide, hidden, run["tokens"], pooled=False)
    title = with_note(f"{label} · before (click cells: edges to knock out)", notes(kind_note, note))
    left = head_detail_figure(hide_map(drawn, hidden), run["tokens"], title)
    if after is None:
        return left, blank, kind_note and f"Map before: {kind_note}."
    touched = altered["layer"]
    change = float(np.abs(after - before).max())
    where = "the intervened layer" if layer == touched else f"{layer - touched} after the intervened layer {touched}"
    if layer < touched:
        where = f"before the intervened layer {touched}: it cannot change"
    right = head_detail_figure(
        hide_map(drawn_after, hidden),
        run["tokens"],
        with_note(f"{label} · after the intervention", notes(after_note, note)),
    )
    line = f"{label} ({where}): largest change of a weight {change:.4f}"
    if kind_note and kind_note == after_note:
        line += f". Both maps: {kind_note}."
    elif kind_note or after_note:
        line += f". Map before: {kind_note or 'attention weights'}; map after: {after_note or 'attention weights'}."
    return left, right, line


@callback(
    Output("interventions-url", "data"),
    Input("interventions-run-data", "data"),
    Input("interventions-kind", "value"),
    Input("interventions-heads", "value"),
    Input("interventions-method", "value"),
    Input("interventions-edges", "value"),
    Input("interventions-klayers", "value"),
    Input("interventions-rlayer", "value"),
    Input("interventions-rpos", "value"),
    Input("interventions-corrupted", "value"),
    Input("interventions-direction", "value"),
    Input("interventions-metric", "value"),
    Input("interventions-answer-a", "value"),
    Input("interventions-answer-b", "value"),
    Input("interventions-view-layer", "value"),
    Input("interventions-view-head", "value"),
    Input("interventions-sweep-on", "data"),
    Input("interventions-hide", "value"),
    Input("interventions-map-kind", "value"),
    prevent_initial_call=True,
)
def to_address(run, *values):
    """Every control of the page in its address (a pasted link reopens the same intervention, maps
    and patching plot)."""
    names = ("kind", "heads", "method", "edges", "klayers", "rlayer", "rpos", "corrupted", "direction", "metric")
    names += ("ans_a", "ans_b", "vlayer", "vhead", "sweep", "hide", "map")
    state = {k: (v if v != "" else None) for k, v in zip(names, values)}
    return query_string({**run_query(run), **state}, PARAMS)
