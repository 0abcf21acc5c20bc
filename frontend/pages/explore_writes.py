"""Explore's callbacks for what heads write: the panel of a causal LM run's prediction (its direct logit
attribution's top heads and its logit lens, fetched when the button is pressed: one recorded forward
of the run, kept by the API for the later requests) and the head detail's map kind (``map_run``: the
run whose maps the detail reads)."""

from __future__ import annotations

from dash import Input, Output, State, callback, ctx, no_update

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.run_record import RunRecord, stored_run
from attnscope.frontend.writes_figures import dla_figure, lens_figure

HIDDEN = "panel llm-hidden"
ASK = "Press 'Explain the prediction'."


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
    n = run.n_tokens
    pos = int(position) if isinstance(position, int) and 0 <= position < n else n - 1
    api = client()
    try:
        att = api.attribution(run.id, position=pos, top_heads=1)
        lens = api.lens(run.id, positions=f"{pos}:{pos + 1}", k=1)
    except ApiError as exc:
        return no_update, no_update, str(exc)
    return dla_figure(att), lens_figure(lens), ""
