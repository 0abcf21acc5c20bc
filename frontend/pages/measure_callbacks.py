"""Callbacks of the measure page (``dash.callback``); all data comes from the API over HTTP."""

from __future__ import annotations

import numpy as np
from dash import Input, Output, State, callback

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.measure_figures import (
    fixed_point_figure,
    fixed_point_summary,
    lipschitz_figure,
    particle_figure,
    w1_profile_figure,
)
from attnscope.frontend.measure_figures import (
    message_figure as _empty,
)
from attnscope.frontend.pages.explore_callbacks import client, run_text

SHARED = "shared"
DASH_BUDGET = {"steps": 15, "draws": 2}  # per layer: a few seconds on a CPU


@callback(
    Output("measure-model", "options"),
    Output("measure-model", "value"),
    Output("measure-status", "children"),
    Input("measure-init", "data"),
    State("run-store", "data"),
)
def load_models(_init, run):
    try:
        listing = client().models()
    except ApiError as exc:
        return [], None, f"API unavailable: {exc}"
    options = [{"label": f"{m.name} · {m.family} · {m.task}", "value": m.name} for m in listing.models]
    names = {m.name for m in listing.models}
    value = run["model"] if run and run.get("model") in names else listing.default
    return options, value, f"API {client().base_url}"


@callback(
    Output("run-store", "data", allow_duplicate=True),
    Output("measure-error", "children"),
    Input("measure-run-button", "n_clicks"),
    State("measure-text", "value"),
    State("measure-model", "value"),
    prevent_initial_call=True,
)
def create_run(n_clicks, text, model):
    return run_text(n_clicks, model, text)


@callback(Output("particle-view", "figure"), Input("run-store", "data"), Input("particle-dims", "value"))
def render_particles(run, dims):
    if not run:
        return _empty("Run a text to see its tokens move through the layers.")
    try:
        p = client().particles(run["id"], dims=dims or 2)
    except ApiError as exc:
        return _empty(str(exc))
    return particle_figure(np.asarray(p.coords), p.tokens, p.depth_labels, explained=p.explained_variance)


@callback(
    Output("w1-profile", "figure"),
    Output("maxent-summary", "children"),
    Output("fixed-point-block", "options"),
    Output("fixed-point-block", "value"),
    Input("run-store", "data"),
)
def render_profile(run):
    if not run:
        return _empty("W1 per layer appears after a run."), "", [], None
    try:
        m = client().measure(run["id"])
    except ApiError as exc:
        return _empty(str(exc)), "", [], None
    if m.max_entropy_deviation is not None:
        summary = (
            "Maximum-entropy check: every attention row re-solved as argmax H(p) + ⟨p, s⟩; largest "
            "deviation per layer: " + ", ".join(f"L{l} {d:.1e}" for l, d in enumerate(m.max_entropy_deviation))
        )
    else:
        summary = m.max_entropy_note
    n_layers = run["shape"][0]
    options = [{"label": "shared block (HA)", "value": SHARED}] + [
        {"label": f"layer {l} (demo)", "value": l} for l in range(n_layers)
    ]
    return w1_profile_figure(m.w1_successive, m.max_entropy_deviation), summary, options, _default_block(run["model"])


def _default_block(model: str):
    """The shared block for weight-sharing (HA) models, else layer 0's block (a demonstration)."""
    try:
        family = next((m.family for m in client().models().models if m.name == model), None)
    except ApiError:
        family = None
    return SHARED if family == "hierarchical-attention" else 0


@callback(Output("lipschitz-panel", "figure"), Input("lipschitz-button", "n_clicks"), Input("run-store", "data"))
def render_lipschitz(n_clicks, run):
    if not run:
        return _empty("Run a text, then compute the bound and the estimate.")
    if not n_clicks:
        return _empty("Press “Compute for every layer” (a few seconds per layer).")
    rows = []
    try:
        for layer in range(run["shape"][0]):
            r = client().lipschitz(run["model"], layer, run_id=run["id"], **DASH_BUDGET)
            rows.append(r.model_dump())
    except ApiError as exc:
        return _empty(str(exc))
    return lipschitz_figure(rows)


@callback(
    Output("fixed-point-view", "figure"),
    Output("fixed-point-summary", "children"),
    Input("fixed-point-button", "n_clicks"),
    State("fixed-point-block", "value"),
    State("fixed-point-steps", "value"),
    State("run-store", "data"),
)
def render_fixed_point(n_clicks, block, steps, run):
    if not run or not n_clicks:
        return _empty("Pick a block and press Iterate."), ""
    try:
        fp = client().fixed_point(run["id"], steps=int(steps or 30), layer=None if block == SHARED else block)
    except ApiError as exc:
        return _empty(str(exc)), ""
    bound = fp.block_bound
    fig = fixed_point_figure(
        fp.w1_steps,
        fp.block,
        fp.trained_depth,
        fp.rate,
        normalised=fp.w1_normalised_steps,
        orbit_bound=None if bound is None else bound.log10_orbit_bound,
        orbit_ratio=None if bound is None else bound.orbit_step_ratio,
    )
    return fig, fixed_point_summary(fp)
