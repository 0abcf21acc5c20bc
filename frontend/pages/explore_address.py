"""Explore's address: what it declares (``PARAMS``) and the callback that writes it back, so a
copied link reopens the same view: the run, the selected head and layer, the head detail's scaling
and hidden keys, and for a causal LM the generation step, the prediction position and the step
view's layer (issue 26 item 6)."""

from __future__ import annotations

from dash import Input, Output, callback

from attnscope.frontend.plot_config import SCALINGS
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.run_state import RUN_PARAMS, run_query
from attnscope.frontend.sink_hiding import HIDES
from attnscope.frontend.url_state import Param, query_string, register_url_sync
from attnscope.frontend.writes_layout import MAP_KINDS

PARAMS = {
    **RUN_PARAMS,
    "layer": Param(int, lo=0, hi=1000),
    "head": Param(str, max_len=12),
    "scaling": Param(str, default="global", choices=SCALINGS),
    "hide": Param(str, default="none", choices=HIDES),
    "step": Param(int, lo=1, hi=100_000),  # the generation step shown (1: the first generated token)
    "position": Param(int, lo=0, hi=1_000_000),  # the prediction panel's position
    "step_layer": Param(int, lo=0, hi=1000),  # the step view's layer
    "map": Param(str, default="attention", choices=MAP_KINDS),  # the head detail's map kind
}
register_url_sync("explore")


def address_values(run, selected, layer, scaling, hide, step, position, step_layer, kind=None) -> dict:
    """The address values of the view: the generation's only when the run has one, the position
    only when it is not the default (the last prompt token)."""
    head = f"L{selected['layer']}H{selected['head']}" if run and selected else None
    values = {**run_query(run), "head": head, "layer": layer if run else None, "scaling": scaling, "hide": hide}
    values["map"] = kind
    if run and run.causal:
        steps = run.generation.steps if run.generation else []
        implied = len(run.tokens) - 1  # the prediction's default position: the last prompt token
        if steps:
            values.update(step=step, step_layer=step_layer)
            implied = steps[step - 1].query if step and 1 <= step <= len(steps) else steps[0].query
        values["position"] = None if position in (None, implied) else position  # the step implies its own
    return values


@callback(
    Output("explore-url", "data"),
    Input("explore-run-data", "data"),
    Input("selected-head", "data"),
    Input("layer-dropdown", "value"),
    Input("head-scaling", "value"),
    Input("head-hide", "value"),
    Input("gen-step", "value"),
    Input("prediction-position", "value"),
    Input("gen-layer", "value"),
    Input("map-kind", "value"),
    prevent_initial_call=True,
)
def to_address(data, selected, layer, scaling, hide, step, position, step_layer, kind):
    run = stored_run(data)
    try:
        step = int(step) if step is not None else None
    except (TypeError, ValueError):
        step = None
    return query_string(address_values(run, selected, layer, scaling, hide, step, position, step_layer, kind), PARAMS)
