"""Callbacks of the measure page (``dash.callback``); all data comes from the API over HTTP."""

from __future__ import annotations

import numpy as np
from dash import ClientsideFunction, Input, Output, State, callback, clientside_callback, ctx, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.lipschitz_figures import fixed_point_figure, fixed_point_summary, lipschitz_figure
from attnscope.frontend.page_common import client, describe_error
from attnscope.frontend.particle_figures import particle_figure, w1_profile_figure
from attnscope.frontend.plot_config import message_figure as _empty
from attnscope.frontend.run_controls import model_dropdown, run_text
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.run_state import NO_RUN, RUN_PARAMS, is_new, resolve_record, run_query
from attnscope.frontend.stale_note import register_stale_note
from attnscope.frontend.token_counter import register_token_counter
from attnscope.frontend.url_state import Param, query_string, register_url_sync

SHARED = "shared"
DASH_BUDGET = {"steps": 15, "draws": 2}  # per layer: a few seconds on a CPU
PARAMS = {**RUN_PARAMS, "dims": Param(int, default=2, choices=(2, 3))}
register_url_sync("measure")
register_token_counter("measure", "measure-text", "measure-model")
register_stale_note("measure", "measure-run-data", "measure-text", "measure-model")


@callback(
    Output("measure-model", "options"),
    Output("measure-model", "value"),
    Output("measure-status", "children"),
    Output("measure-status", "className"),
    Input("measure-query", "data"),
    State("run-store", "data"),
)
def load_models(query, stored):
    return model_dropdown(
        query, stored, lambda models: [{"label": f"{m.name} · {m.family} · {m.task}", "value": m.name} for m in models]
    )


@callback(
    Output("measure-run-data", "data"),
    Output("measure-run-about", "children"),
    Output("measure-run-error", "children"),
    Output("run-store", "data", allow_duplicate=True),
    Output("measure-text", "value"),
    Input("measure-query", "data"),
    Input("measure-run-retry", "n_clicks"),
    State("run-store", "data"),
    prevent_initial_call="initial_duplicate",
)
def resolve(query, _retry, stored):
    """The run this page opens with: the address's (made again if the API forgot it), else the
    session's current run."""
    query = query or {}
    run, message = resolve_record(client(), query.get("run"), query.get("model"), query.get("text"), stored)
    if run is None:
        failed = message != NO_RUN
        return None, "" if failed else message, message if failed else "", no_update, no_update
    share = run.to_store() if is_new(run, stored) else no_update
    about = _about(run) + (f" — {message}" if message else "")
    return run.to_store(), about, "", share, run.text or no_update


def _about(run) -> str:
    return f"Run {run.id} · {run.model} · {run.n_layers} layers"


@callback(
    Output("measure-run-data", "data", allow_duplicate=True),
    Output("run-store", "data", allow_duplicate=True),
    Output("measure-error", "children"),
    Output("measure-run-about", "children", allow_duplicate=True),
    Input("measure-run-button", "n_clicks"),
    State("measure-text", "value"),
    State("measure-model", "value"),
    running=[(Output("measure-run-button", "disabled"), True, False)],
    prevent_initial_call=True,
)
def create_run(n_clicks, text, model):
    """Run the text; the line above the panels names the new run (it said "No run yet" before)."""
    store, error = run_text(n_clicks, model, text)
    run = stored_run(store) if isinstance(store, dict) else None
    return store, store, error, _about(run) if run else no_update


@callback(
    Output("measure-url", "data"),
    Input("measure-run-data", "data"),
    Input("particle-dims", "value"),
    prevent_initial_call=True,
)
def to_address(data, dims):
    return query_string({**run_query(stored_run(data)), "dims": dims}, PARAMS)


@callback(Output("particle-view", "figure"), Input("measure-run-data", "data"), Input("particle-dims", "value"))
def render_particles(data, dims):
    run = stored_run(data)
    if not run:
        return _empty("Run a text to see its tokens move through the layers.")
    try:
        p = client().particles(run.id, dims=dims or 2)
    except ApiError as exc:
        return _empty(describe_error(exc, "The particle view could not be computed"))
    return particle_figure(np.asarray(p.coords), p.tokens, p.depth_labels, explained=p.explained_variance)


@callback(
    Output("w1-profile", "figure"),
    Output("maxent-summary", "children"),
    Output("fixed-point-block", "options"),
    Output("fixed-point-block", "value"),
    Input("measure-run-data", "data"),
)
def render_profile(data):
    run = stored_run(data)
    if not run:
        return _empty("W1 per layer appears after a run."), "", [], None
    try:
        m = client().measure(run.id)
    except ApiError as exc:
        return _empty(describe_error(exc, f"W1 per layer of {run.model}")), "", [], None
    if m.max_entropy_deviation is not None:
        summary = (
            "Maximum-entropy check: every attention row re-solved as argmax H(p) + ⟨p, s⟩; largest "
            "deviation per layer: " + ", ".join(f"L{l} {d:.1e}" for l, d in enumerate(m.max_entropy_deviation))
        )
    else:
        summary = m.max_entropy_note
    n_layers = run.n_layers
    options = [{"label": "shared block (HA)", "value": SHARED}] + [
        {"label": f"layer {l} (demo)", "value": l} for l in range(n_layers)
    ]
    return w1_profile_figure(m.w1_successive, m.max_entropy_deviation), summary, options, _default_block(run.model)


def _default_block(model: str):
    """The shared block for weight-sharing (HA) models, else layer 0's block (a demonstration)."""
    try:
        family = next((m.family for m in client().models().models if m.name == model), None)
    except ApiError:
        family = None
    return SHARED if family == "hierarchical-attention" else 0


# after each layer, the browser asks for the next one (``attnscope.nextStep`` sets lipschitz-next):
# the page shows "layer i of n" as it goes instead of one silent wait for every layer
clientside_callback(
    ClientsideFunction(namespace="attnscope", function_name="nextStep"),
    Output("lipschitz-kick", "data"),
    Input("lipschitz-state", "data"),
    State("lipschitz-next", "id"),
    prevent_initial_call=True,
)


@callback(
    Output("lipschitz-state", "data"),
    Output("lipschitz-progress", "value"),
    Output("lipschitz-status", "children"),
    Input("lipschitz-button", "n_clicks"),
    Input("lipschitz-next", "data"),
    Input("measure-run-data", "data"),
    State("lipschitz-state", "data"),
    prevent_initial_call=True,
)
def lipschitz_step(n_clicks, _next, data, state):
    """One layer per call: Compute starts at layer 0, each finished layer asks for the next."""
    run = stored_run(data)
    if not run:
        return None, 0, ""
    n = run.n_layers
    if ctx.triggered_id == "measure-run-data":
        return None, 0, ""
    if ctx.triggered_id == "lipschitz-button":
        if not n_clicks:
            return no_update, no_update, no_update
        return {"run": run.id, "rows": [], "next": 0, "n": n}, 0, f"layer 1 of {n}…"
    if not state or state.get("run") != run.id or state.get("error") or state["next"] >= n:
        return no_update, no_update, no_update
    layer = state["next"]
    try:
        row = client().lipschitz(run.model, layer, run_id=run.id, **DASH_BUDGET).model_dump()
    except ApiError as exc:
        return {**state, "error": describe_error(exc, f"Layer {layer}")}, layer / n, f"stopped at layer {layer}"
    done = layer + 1
    status = f"layer {done + 1} of {n}…" if done < n else f"{n} of {n} layers done"
    return {**state, "rows": state["rows"] + [row], "next": done}, done / n, status


@callback(Output("lipschitz-panel", "figure"), Input("lipschitz-state", "data"), State("measure-run-data", "data"))
def render_lipschitz(state, data):
    if not stored_run(data):
        return _empty("Run a text, then compute the bound and the estimate.")
    if not state:
        return _empty("Press “Compute for every layer” (a few seconds per layer).")
    if state.get("error"):
        return _empty(state["error"])
    if state["next"] < state["n"]:
        return no_update
    return lipschitz_figure(state["rows"])


@callback(
    Output("fixed-point-view", "figure"),
    Output("fixed-point-summary", "children"),
    Input("fixed-point-button", "n_clicks"),
    State("fixed-point-block", "value"),
    State("fixed-point-steps", "value"),
    State("measure-run-data", "data"),
    running=[(Output("fixed-point-button", "disabled"), True, False)],
)
def render_fixed_point(n_clicks, block, steps, data):
    run = stored_run(data)
    if not run or not n_clicks:
        return _empty("Pick a block and press Iterate."), ""
    try:
        fp = client().fixed_point(run.id, steps=int(steps or 30), layer=None if block == SHARED else block)
    except ApiError as exc:
        return _empty(describe_error(exc, f"Iterating the block of {run.model}")), ""
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
