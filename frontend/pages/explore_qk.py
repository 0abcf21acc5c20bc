"""Callbacks of Explore's "why this head attends" panel (``frontend/qk_layout.py``): a click on a cell of
the head detail sets the query and key; the QK view and attribution of the selected head there
(``GET /runs/{id}/qk``) and the head's composition scores (``GET /models/{name}/composition``).

Cheap at 4,096 tokens: nothing is fetched until a query position is chosen; then one query row of the
selected head (the strongest key when no key is given) and one (query, key) attribution, whose
forward pass stops at the head's layer. Composition scores depend on the weights only: the API
computes them once per model and mode, and this process keeps the last few it read."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
from dash import Input, Output, State, callback, ctx, no_update

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.qk_figures import (
    head_composition_figure,
    key_parts_figure,
    layer_pair_composition_figure,
    qk_matrix_figure,
    qk_product_figure,
)
from attnscope.frontend.qk_layout import QK_HINT, QK_MODES
from attnscope.frontend.run_record import RunRecord, stored_run
from attnscope.frontend.sink_hiding import HIDES, hidden_positions

QK_PARTS = 16  # query and key parts the heatmap lists (the rest summed into "other")
_COMPOSITIONS: OrderedDict[tuple[str, str, str], object] = OrderedDict()
_LOCK = threading.Lock()
_KEEP = 8


def clicked_pair(click: dict | None, n_tokens: int, causal: bool) -> tuple[int, int] | None:
    """The (query, key) positions of a click on the head detail (a pooled cell: its centre, rounded,
    within range, and for a causal model a key at or before the query)."""
    points = (click or {}).get("points") or []
    if not points or points[0].get("x") is None or points[0].get("y") is None:
        return None
    query = min(max(int(round(float(points[0]["y"]))), 0), n_tokens - 1)
    key = min(max(int(round(float(points[0]["x"]))), 0), n_tokens - 1)
    return query, min(key, query) if causal else key


@callback(
    Output("qk-query", "value"),
    Output("qk-key", "value"),
    Input("head-detail", "clickData"),
    State("explore-run-data", "data"),
    prevent_initial_call=True,
)
def click_to_pair(click, data):
    run = stored_run(data)
    pair = clicked_pair(click, run.n_tokens, run.causal) if run else None
    if pair is None:
        return no_update, no_update
    return pair


def strongest_key(api: ApiClient, run: RunRecord, layer: int, head: int, query: int, hidden=()) -> int:
    """The key ``query`` attends to most in ``L{layer}H{head}``, the ``hidden`` keys (the page's sink
    hiding) left out: one row of the map is read."""
    row = api.attention(run.id, layer, head, encoding="json", rows=(query, query + 1), cols=(0, run.n_tokens))[0]
    shown = np.setdiff1d(np.arange(run.n_tokens), np.asarray(list(hidden), dtype=int))
    return int(shown[np.argmax(row[shown])]) if len(shown) else int(np.argmax(row))


def qk_figures(api: ApiClient, run: RunRecord, layer: int, head: int, query: int, key: int | None, hide: str = "none"):
    """``(matrix, key parts, product, note)`` of the selected head at (query, key); no key: the query's
    strongest among the keys ``hide`` leaves shown."""
    if not 0 <= query < run.n_tokens:
        raise ApiError(
            422, f"query position {query} is out of range: the run has {run.n_tokens} tokens (0..{run.n_tokens - 1})"
        )
    chosen = key is not None
    if not chosen:
        hidden = hidden_positions(hide if hide in HIDES else "none", run.n_tokens, run.special)
        key = strongest_key(api, run, layer, head, query, hidden)
    qk = api.qk(run.id, layer, head, query, key, parts=QK_PARTS)
    att = qk.attribution
    kind = "" if chosen else " (the query's strongest key)"
    capped = "" if qk.view.softcap is None else f", soft-capped to {qk.view.logit:.4g} (cap {qk.view.softcap:g})"
    note = (
        f"L{layer}H{head} (kv head {qk.kv_head}): query {query} {qk.query_token!r} -> key {key} {qk.key_token!r}"
        f"{kind}: score {qk.view.score:.4g}{capped}, weight {qk.view.weight:.4g}; the most of it comes from "
        f"{att.top_key_part} at the key; terms sum to the score within {att.conservation_error:.1e}."
    )
    return qk_matrix_figure(qk), key_parts_figure(qk), qk_product_figure(qk), note


@callback(
    Output("qk-matrix", "figure"),
    Output("qk-key-parts", "figure"),
    Output("qk-product", "figure"),
    Output("qk-note", "children"),
    Input("selected-head", "data"),
    Input("qk-query", "value"),
    Input("qk-key", "value"),
    State("explore-run-data", "data"),
    State("head-hide", "value"),
)
def render_qk(selected, query, key, data, hide):
    run = stored_run(data)
    if not run or not selected or query is None:
        if ctx.triggered_id == "selected-head" and query is None:  # the hints stay: no redraw on a head click
            return no_update, no_update, no_update, no_update
        blank = empty_figure(QK_HINT)
        return blank, blank, blank, QK_HINT
    try:
        key = None if key is None else int(key)
        return qk_figures(client(), run, selected["layer"], selected["head"], int(query), key, hide)
    except ApiError as exc:
        blank = empty_figure(str(exc))
        return blank, blank, blank, str(exc)


def composition(api: ApiClient, model: str, mode: str):
    """The model's ``mode``-composition scores, read once per (API, model, mode) and kept (bounded)."""
    key = (api.base_url, model, mode)
    with _LOCK:
        if key in _COMPOSITIONS:
            _COMPOSITIONS.move_to_end(key)
            return _COMPOSITIONS[key]
    comp = api.composition(model, mode)
    with _LOCK:
        _COMPOSITIONS[key] = comp
        while len(_COMPOSITIONS) > _KEEP:
            _COMPOSITIONS.popitem(last=False)
    return comp


@callback(
    Output("qk-composition", "figure"),
    Output("qk-composition-layers", "figure"),
    Input("selected-head", "data"),
    Input("qk-mode", "value"),
    Input("qk-query", "value"),
    State("explore-run-data", "data"),
)
def render_composition(selected, mode, query, data):
    """The selected head's composition with every earlier head, and the layer-pair matrix (the
    selected head's layer outlined)."""
    run = stored_run(data)
    if not run or not selected or query is None:
        if ctx.triggered_id == "selected-head" and query is None:  # the hints stay: no redraw on a head click
            return no_update, no_update
        blank = empty_figure("Composition scores of the selected head appear with its QK view.")
        return blank, blank
    mode = mode if mode in QK_MODES else "k"
    try:
        comp = composition(client(), run.model, mode)
    except ApiError as exc:
        blank = empty_figure(str(exc))
        return blank, blank
    layer = selected["layer"]
    return head_composition_figure(comp, layer, selected["head"]), layer_pair_composition_figure(comp, layer)
