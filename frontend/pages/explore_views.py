"""Explore's two views of the selected head and layer: the head detail (a head's map, zoomed to a
token window, its hover computed in the browser) and the head view (a layer's top-k lines). The
model view that selects the head is in ``explore_callbacks.py``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from dash import ClientsideFunction, Input, Output, State, callback, clientside_callback, ctx
from dash.exceptions import PreventUpdate

from attnscope.frontend.api_client import ApiClient, ApiError, Thumbnails
from attnscope.frontend.figures import detail_stride, head_detail_figure, head_view_figure, window_from_relayout
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.pages.explore_writes import map_run
from attnscope.frontend.plot_config import SCALINGS
from attnscope.frontend.run_record import RunRecord, stored_run
from attnscope.frontend.sink_hiding import HIDES, hidden_positions, hide_note, hide_top_k, renormalise

DETAIL_HINT = "Run a text, then click a head in the model view."
FETCH = ThreadPoolExecutor(max_workers=4, thread_name_prefix="explore-fetch")  # API reads side by side
HEAD_VIEW_K = 8  # head view: each query row's 8 strongest keys


# the hover outline (assets/attnscope.js) is a relayout of the head detail too: only zooms and resets
# reach the server, so moving the mouse cannot supersede a zoom's fetch in flight
clientside_callback(
    ClientsideFunction(namespace="attnscope", function_name="zoomOnly"),
    Output("detail-zoom", "data"),
    Input("head-detail", "relayoutData"),
    prevent_initial_call=True,
)


@callback(
    Output("head-detail", "figure"),
    Output("detail-window", "data"),
    Input("selected-head", "data"),
    Input("detail-zoom", "data"),
    Input("head-scaling", "value"),
    Input("head-hide", "value"),
    Input("map-kind", "value"),
    State("detail-window", "data"),
    State("run-store", "data"),
    prevent_initial_call=True,
)
def render_detail(selected, relayout, scaling, hide, kind, window, data):
    """The selected head's detail: a new head opens whole, a box zoom fetches its token window at
    full resolution (a reset: whole again), a new scaling redraws the same window."""
    run = stored_run(data)
    trigger = ctx.triggered_id
    if trigger == "detail-zoom":  # a zoom or a reset (the browser passes no other relayout on)
        new = window_from_relayout(relayout, run.n_tokens, window) if run and selected else None
        if new is None:
            raise PreventUpdate
        window = new
    elif trigger == "selected-head":
        if selected and selected.get("drawn"):  # drawn by the grid in the same response
            raise PreventUpdate
        window = {}
    if not run or not selected:
        return empty_figure(DETAIL_HINT), {}
    figure = detail_figure(
        client(), run, selected["layer"], selected["head"], window or {}, scaling, hide or "none", kind
    )
    return figure, window or {}


def detail_figure(
    api: ApiClient,
    run: RunRecord,
    layer: int,
    head: int,
    window: dict,
    scaling: str | None,
    hide: str = "none",
    kind: str | None = None,
):
    """Head ``layer``/``head``'s detail figure over ``window`` (``rows``/``cols``; empty: all), read
    through ``api`` (callable from a worker thread: no Flask context needed); ``hide``: the keys
    blanked and renormalised away (``sink_hiding``); ``kind``: the map kind (``explore_writes``)."""
    n = run.n_tokens
    rows, cols = tuple(window.get("rows", (0, n))), tuple(window.get("cols", (0, n)))
    stride = detail_stride(rows, cols)  # at most 256 cells per side; full resolution inside a small window
    hidden = hidden_positions(hide if hide in HIDES else "none", n, run.special)
    try:
        shown = map_run(api, run, kind)
        weights = api.attention(shown.id, layer, head, rows=rows, cols=cols, stride=stride, pool="max")
        if hidden:  # each row's weight on the hidden keys, at the figure's row resolution
            mass = sum(
                api.attention(shown.id, layer, head, rows=rows, cols=(h, h + 1), stride=stride, pool="mean")[:, 0]
                for h in hidden
            )
            blank = sorted({(h - cols[0]) // stride for h in hidden if cols[0] <= h < cols[1]})
            weights = renormalise(weights, mass, blank)
    except ApiError as exc:
        return empty_figure(str(exc))
    zoom = (
        "" if (rows, cols) == ((0, n), (0, n)) else f" · queries {rows[0]}-{rows[1] - 1}, keys {cols[0]}-{cols[1] - 1}"
    )
    pooled = f" · {stride}x{stride} max-pooled" if stride > 1 else ""
    note = hide_note(hide, hidden, run.tokens, stride > 1)
    vw = " · value-weighted" if shown is not run else ""
    title = f"L{layer}H{head} · {run.model}{vw}{zoom}{pooled}" + (f"<br><sub>{note}</sub>" if note else "")
    scaling = scaling if scaling in SCALINGS else "global"
    return head_detail_figure(weights, run.tokens, title, rows=rows, cols=cols, stride=stride, scaling=scaling)


def hidden_thumbnails(thumbs: Thumbnails, hidden: list[int]) -> np.ndarray:
    """The thumbnails ``[layer, head, R, R]`` with the ``hidden`` keys' pooled columns blank (NaN) and
    each pooled row divided by one minus its block's mean weight on them (``sink_hiding``: an
    approximation, as pooled). ``hidden`` keys are among ``thumbs.keys`` (the first token and the
    special positions)."""
    if not hidden:
        return thumbs.means
    mass = sum(thumbs.key_means[..., thumbs.keys.index(h)] for h in hidden)  # [layer, head, R]
    blank = sorted({h // thumbs.stride for h in hidden})
    return np.stack(
        [
            np.stack([renormalise(thumbs.means[l, i], mass[l, i], blank) for i in range(thumbs.means.shape[1])])
            for l in range(thumbs.means.shape[0])
        ]
    )


# the hover names the tokens under the cursor from the run's tokens and the figure's own binary weights,
# in the browser (assets/attention_views.js): no per-cell hover text travels
clientside_callback(
    ClientsideFunction(namespace="attnscope_views", function_name="detailHover"),
    Output("head-detail-hover", "children"),
    Input("head-detail", "hoverData"),
    State("head-detail", "figure"),
    State("run-store", "data"),
)


# the head view follows the selected head: a click on a thumbnail shows that head's layer with that head
# alone (in the browser, no round trip); the layer's other heads are one tick of the checklist away. It
# follows once the clicked head's detail has arrived, so the head view's reads never compete with the
# detail's for the API; its lines are each row's top-k keys of the checked heads only, read a head at a time
# (QKMapSource.top_k on a lazy run: 0.4 CPU-s a head at 4,096 tokens), so a click does not hold the API for a
# whole layer's top-k while the detail's zoom waits (what made eb7e7a6 take this out). A zoom or a new
# scaling redraws the detail too: the head view follows only a head it has not followed yet.
clientside_callback(
    """function (_figure, selected) {
        var none = window.dash_clientside.no_update;
        if (!selected || selected.drawn) { return [none, none]; }
        var key = [selected.run, selected.layer, selected.head].join(":");
        if (window.attnscopeFollowed === key) { return [none, none]; }
        window.attnscopeFollowed = key;
        return [selected.layer, [selected.head]];
    }""",
    Output("layer-dropdown", "value", allow_duplicate=True),
    Output("head-checklist", "value", allow_duplicate=True),
    Input("head-detail", "figure"),
    State("selected-head", "data"),
    prevent_initial_call=True,
)


@callback(
    Output("head-view", "figure"),
    Input("layer-dropdown", "value"),
    Input("head-checklist", "value"),
    Input("explore-run-data", "data"),
    Input("head-hide", "value"),
)
def render_head_view(layer, heads, data, hide):
    run = stored_run(data)
    if not run or layer is None:
        return empty_figure("The head view appears after a run.")
    if not heads:
        return empty_figure("Select at least one head.")
    n, heads = run.n_tokens, sorted(heads)
    hidden = hidden_positions(hide if hide in HIDES else "none", n, run.special)
    try:
        indices, weights = head_view_lines(client(), run, layer, heads, min(HEAD_VIEW_K + len(hidden), n), hidden)
    except ApiError as exc:
        return empty_figure(str(exc))
    note = hide_note(hide, hidden, run.tokens, pooled=False)
    return head_view_figure(indices, weights, run.tokens, heads, layer, note=note)


def head_view_lines(
    api: ApiClient, run: RunRecord, layer: int, heads: list[int], k: int, hidden: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """``(indices, weights)`` ``[head, query, k]`` of ``layer`` (every head of the run; the rows of
    heads not in ``heads`` are 0): each row's top ``k`` keys, the ``hidden`` keys' weights set to 0
    and the rest renormalised (``sink_hiding.hide_top_k``). A few heads are read one by one, side by
    side; most of a layer, as the layer."""
    n = run.n_tokens
    indices = np.zeros((run.n_heads, n, k), dtype=np.int64)
    weights = np.zeros((run.n_heads, n, k), dtype=np.float32)
    if 2 * len(heads) > run.n_heads:
        got = dict(zip(range(run.n_heads), zip(*api.attention_top_k(run.id, layer, k=k)), strict=True))
    else:
        reads = {h: FETCH.submit(api.attention_top_k, run.id, layer, k, h) for h in heads}
        got = {h: f.result() for h, f in reads.items()}
    for h in heads:
        indices[h], weights[h] = got[h]
        if hidden:  # [query]: the row's weight on the hidden keys, renormalised away
            mass = sum(api.attention(run.id, layer, h, rows=(0, n), cols=(p, p + 1))[:, 0] for p in hidden)
            weights[h] = hide_top_k(indices[h][None], weights[h][None], mass[None], hidden)[0]
    return indices, weights
