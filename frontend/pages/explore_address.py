"""Explore's address: what it declares (``PARAMS``) and the callback that writes it back, so a
copied link reopens the same view: the run, the selected head and layer, the head detail's scaling
and hidden keys, and for a causal LM the generation step, the prediction position and the step
view's layer (issue 26 item 6), the QK view's query, key and composition mode (issue 24), the map
kind and the open logit lens's k and target (issue 23)."""

from __future__ import annotations

from dash import Input, Output, callback

from attnscope.frontend.pages.explore_lens import lens_address
from attnscope.frontend.plot_config import SCALINGS
from attnscope.frontend.qk_layout import QK_MODES
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.run_state import RUN_PARAMS, run_query
from attnscope.frontend.sink_hiding import HIDES
from attnscope.frontend.token_view import DIRECTIONS
from attnscope.frontend.url_state import Param, query_string, register_url_sync
from attnscope.frontend.writes_layout import MAP_KINDS
from attnscope.server.schemas.writes import MAX_ANSWER_CHARS, MAX_LENS_K

PARAMS = {
    **RUN_PARAMS,
    "layer": Param(int, lo=0, hi=1000),
    "head": Param(str, max_len=12),
    "scaling": Param(str, default="global", choices=SCALINGS),
    "hide": Param(str, default="none", choices=HIDES),
    "step": Param(int, lo=1, hi=100_000),  # the generation step shown (1: the first generated token)
    "position": Param(int, lo=0, hi=1_000_000),  # the prediction panel's position
    "step_layer": Param(int, lo=0, hi=1000),  # the step view's layer
    "step_scaling": Param(str, default="global", choices=SCALINGS),  # the step view's colour scaling
    "step_hide": Param(str, default="none", choices=HIDES),  # the keys the step view hides
    "qk_query": Param(int, lo=0, hi=1_000_000),  # the QK view's query position (none: the view is off)
    "qk_key": Param(int, lo=0, hi=1_000_000),  # its key (none: the query's strongest)
    "qk_mode": Param(str, default="k", choices=QK_MODES),  # the composition shown
    "map": Param(str, default="attention", choices=MAP_KINDS),  # the head views' map kind
    "lens_k": Param(int, lo=1, hi=MAX_LENS_K),  # the logit lens's top k; present: the lens is open
    "lens_target": Param(str, max_len=MAX_ANSWER_CHARS),  # its target token (none: the model's own next)
    "token": Param(int, lo=0, hi=1_000_000),  # the token view's locked token
    "token_dir": Param(str, default="from", choices=DIRECTIONS),  # its direction: what it reads, who reads it
}
register_url_sync("explore")


def address_values(
    run,
    selected,
    layer,
    scaling,
    hide,
    step,
    position,
    step_layer,
    qk=(None, None, "k"),
    kind=None,
    step_view=None,
    token=None,
    lens=None,
) -> dict:
    """The address values of the view: the generation's only when the run has one, the position
    only when it is not the default (the last prompt token); ``qk``: the QK view's (query, key, mode);
    ``step_view``: the step view's (scaling, hide); ``token``: the token view's (locked token, direction);
    ``lens``: the lens's ``{lens_k, lens_target}`` (``explore_lens.lens_address``)."""
    head = f"L{selected['layer']}H{selected['head']}" if run and selected else None
    values = {**run_query(run), "head": head, "layer": layer if run else None, "scaling": scaling, "hide": hide}
    if run:
        values.update(qk_query=qk[0], qk_key=qk[1], qk_mode=qk[2])
    values["map"] = kind
    if run:
        focus, direction = token or (None, None)
        values.update(token=focus, token_dir=direction)
    if run and run.causal:
        steps = run.generation.steps if run.generation else []
        implied = len(run.tokens) - 1  # the prediction's default position: the last prompt token
        if steps:
            values.update(step=step, step_layer=step_layer)
            values.update(zip(("step_scaling", "step_hide"), step_view or (None, None), strict=True))
            implied = steps[step - 1].query if step and 1 <= step <= len(steps) else steps[0].query
        values["position"] = None if position in (None, implied) else position  # the step implies its own
        values.update(lens or {})
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
    Input("qk-query", "value"),
    Input("qk-key", "value"),
    Input("qk-mode", "value"),
    Input("map-kind", "value"),
    Input("gen-scaling", "value"),
    Input("gen-hide", "value"),
    Input("token-focus", "data"),
    Input("token-dir", "value"),
    Input("lens-open", "data"),
    Input("lens-k", "value"),
    Input("lens-target", "value"),
    prevent_initial_call=True,
)
def to_address(
    data, selected, layer, scaling, hide, step, position, step_layer, qk_query, qk_key, qk_mode, kind, *views
):
    """The address of the view; ``views``: the step view's (scaling, hide), the token view's (focus,
    direction) and the lens's (open, k, target)."""
    step_view, (focus, direction), lens = views[:2], views[2:4], views[4:]
    locked = focus.get("query") if isinstance(focus, dict) and focus.get("locked") else None
    run = stored_run(data)
    try:
        step = int(step) if step is not None else None
    except (TypeError, ValueError):
        step = None
    qk = (_position(qk_query), _position(qk_key), qk_mode)
    values = address_values(
        run,
        selected,
        layer,
        scaling,
        hide,
        step,
        position,
        step_layer,
        qk,
        kind,
        step_view,
        (locked, direction),
        lens_address(*lens),
    )
    return query_string(values, PARAMS)


def _position(value) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
