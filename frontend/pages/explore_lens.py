"""Explore's logit lens of a position (causal LMs): the strip of the run's tokens (a click opens the
lens of the prediction after that token and makes it the page's prediction position), the lens grid
(layers x top-k tokens beside the target's rank by layer) of the chosen position, drawn while the
lens is open (``lens-open``: a token click, 'Explain the prediction' or a copied link whose address
holds ``lens_k``), again when the position (the Prediction panel's menu: the keyboard path), k or the
target changes. Data from the API over HTTP only (one recorded forward of the run, kept by the API)."""

from __future__ import annotations

from dash import ALL, Input, Output, callback, clientside_callback

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.pages.explore_writes import prediction_position
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.writes_figures import lens_grid_figure
from attnscope.frontend.writes_layout import LENS_K, token_strip
from attnscope.server.schemas import MAX_LENS_K

OPEN = "Click a token above for the logit lens of the prediction after it."


def lens_k(value) -> int:
    """The k input's value as a whole number in ``[1, MAX_LENS_K]`` (empty or not a number: ``LENS_K``)."""
    try:
        return min(MAX_LENS_K, max(1, int(value)))
    except (TypeError, ValueError):
        return LENS_K


def lens_target(value) -> str | None:
    """The target input's text, ``None`` when empty (the model's own next token); spaces are kept:
    ``" Paris"`` is another token than ``"Paris"``."""
    return value if isinstance(value, str) and value.strip() else None


@callback(
    Output("lens-tokens", "children"),
    Input("explore-run-data", "data"),
    Input("prediction-position", "value"),
)
def render_tokens(data, position):
    run = stored_run(data)
    if not run or not run.causal:
        return []
    return token_strip(run.tokens, position if isinstance(position, int) else None)


# a click on a token: the page's prediction position becomes it, and the lens opens (in the browser, no
# round trip before the lens's own); a redrawn strip (its buttons at 0 clicks) changes nothing
clientside_callback(
    """function (clicks) {
        var trigger = window.dash_clientside.callback_context.triggered_id;
        if (!trigger || !(clicks || []).some(Boolean)) {
            return [window.dash_clientside.no_update, window.dash_clientside.no_update];
        }
        return [trigger.pos, true];
    }""",
    Output("prediction-position", "value", allow_duplicate=True),
    Output("lens-open", "data", allow_duplicate=True),
    Input({"type": "lens-token", "pos": ALL}, "n_clicks"),
    prevent_initial_call=True,
)

# 'Explain the prediction' opens the lens too, 'Close the lens' closes it (and takes it out of the address)
clientside_callback(
    """function (explain, close) {
        var trigger = window.dash_clientside.callback_context.triggered_id;
        if (trigger === "lens-close" && close) { return false; }
        return explain ? true : window.dash_clientside.no_update;
    }""",
    Output("lens-open", "data", allow_duplicate=True),
    Input("writes-button", "n_clicks"),
    Input("lens-close", "n_clicks"),
    prevent_initial_call=True,
)


@callback(
    Output("writes-lens", "figure"),
    Output("writes-error", "children"),
    Input("lens-open", "data"),
    Input("prediction-position", "value"),
    Input("lens-k", "value"),
    Input("lens-target", "value"),
    Input("explore-run-data", "data"),
)
def render_lens(opened, position, k, target, data):
    """The lens grid of the prediction after the chosen position, while the lens is open."""
    run = stored_run(data)
    if not run or not run.causal or not opened:
        return empty_figure(OPEN), ""
    pos = prediction_position(run, position)
    try:
        lens = client().lens(run.id, positions=f"{pos}:{pos + 1}", k=lens_k(k), target=lens_target(target))
    except ApiError as exc:
        return empty_figure(str(exc)), str(exc)
    return lens_grid_figure(lens), ""


def lens_address(opened, k, target) -> dict:
    """The address's lens values: ``lens_k`` (and ``lens_target`` when set) while the lens is open,
    so a copied link reopens it; nothing when it is closed."""
    if not opened:
        return {"lens_k": None, "lens_target": None}
    return {"lens_k": lens_k(k), "lens_target": lens_target(target)}
