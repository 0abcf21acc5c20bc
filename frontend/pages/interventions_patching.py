"""Callbacks of the interventions page's batched views: the per-head effect grid and the layer x
position patching plot (a cell click sets up that residual patch). Errors from the API are shown in
red beside the view and the last figure stays."""

from __future__ import annotations

from dash import Input, Output, State, callback, ctx, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.intervention_figures import effect_grid_figure, importance_scatter, parse_heads, patching_figure
from attnscope.frontend.intervention_forms import metric_fields
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.pages.interventions_callbacks import METRIC_FORM
from attnscope.frontend.run_state import NO_RUN


@callback(
    Output("interventions-grid", "figure"),
    Output("interventions-importance", "figure"),
    Output("interventions-grid-note", "children"),
    Output("interventions-grid-error", "children"),
    Input("interventions-grid-button", "n_clicks"),
    State("interventions-run-data", "data"),
    State("interventions-method", "value"),
    State("interventions-heads", "value"),
    *METRIC_FORM,
    prevent_initial_call=True,
)
def grid(_clicks, run, method, text, metric, ans_a, ans_b, corrupted, direction):
    if not run:
        return empty_figure(NO_RUN), empty_figure(""), "", ""
    fields, problems = metric_fields(metric, ans_a, ans_b, corrupted, direction)
    if problems:
        return no_update, no_update, no_update, "; ".join(problems)
    for key in ("corrupted", "direction"):  # an ablation grid reads no other input
        fields.pop(key, None)
    try:
        res = client().head_effects(run["id"], {"method": method or "zero", **fields})
    except ApiError as exc:
        return no_update, no_update, no_update, f"The grid failed: {exc.detail}"
    heads, _ = parse_heads(text)
    top = res.top[0]
    note = (
        f"{len(res.effect)} × {len(res.effect[0])} heads in {res.seconds:.1f} s · largest effect "
        f"L{top.layer}H{top.head} (Δ {res.metric} {top.effect:+.4f})"
    )
    return effect_grid_figure(res.effect, res.metric, heads), importance_scatter(res.model_dump()), note, ""


@callback(
    Output("interventions-sweep", "figure"),
    Output("interventions-sweep-note", "children"),
    Output("interventions-sweep-error", "children"),
    Output("interventions-sweep-on", "data"),
    Input("interventions-sweep-button", "n_clicks"),
    Input("interventions-run-data", "data"),
    State("interventions-sweep-on", "data"),
    *METRIC_FORM,
)
def sweep(_clicks, run, on, metric, ans_a, ans_b, corrupted, direction):
    """The layer x position patching plot, on the button (or on opening a link that had it)."""
    pressed = ctx.triggered_id == "interventions-sweep-button"
    hint = empty_figure("Type a corrupted text (as many tokens as the run) and press Patch every layer × position.")
    if not run:
        return hint, "", "", no_update
    if not pressed and not on:
        return hint, "", "", no_update
    fields, problems = metric_fields(metric, ans_a, ans_b, corrupted, direction)
    if "corrupted" not in fields:
        problems.append("The patching plot needs a corrupted text: the same text with a word changed")
    if problems:
        return no_update, no_update, "; ".join(problems), no_update
    try:
        res = client().residual_patching(run["id"], fields)
    except ApiError as exc:
        return no_update, no_update, f"The patching plot was refused: {exc.detail}", no_update
    n_l, n = len(res.effect), len(res.tokens)
    note = f"{n_l} layers × {n} positions in {res.seconds:.1f} s · {res.direction} · Δ {res.metric}"
    return patching_figure(res.effect, res.tokens, res.metric, res.full), note, "", True


@callback(
    Output("interventions-kind", "value", allow_duplicate=True),
    Output("interventions-rlayer", "value"),
    Output("interventions-rpos", "value"),
    Input("interventions-sweep", "clickData"),
    prevent_initial_call=True,
)
def sweep_cell(click):
    """A cell of the patching plot becomes the residual patch of the Intervene panel."""
    if not click or not click.get("points"):
        return no_update, no_update, no_update
    point = click["points"][0]
    return "patch_residual", int(point["y"]), str(int(point["x"]))
