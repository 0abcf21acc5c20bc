"""Callbacks of the explore page (``dash.callback``): its run (from the address, the session or Run),
the model view and the selected head, the address; the head detail and head view are in
``explore_views.py``. All data comes from the API over HTTP."""

from __future__ import annotations

import re

import numpy as np
from dash import Input, Output, State, callback, ctx, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.figures import thumbnail_src
from attnscope.frontend.head_badges import head_badge
from attnscope.frontend.llm_figures import (
    causal_thumbnail_src,
    column_label,
    group_starts,
    head_label,
    head_order,
    model_options,
)
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.pages.explore_views import DETAIL_HINT, FETCH, detail_figure, hidden_thumbnails
from attnscope.frontend.pages.explore_writes import grid_run
from attnscope.frontend.run_controls import model_dropdown, run_text
from attnscope.frontend.run_record import RunRecord, stored_run
from attnscope.frontend.run_state import NO_RUN, is_new, resolve_record
from attnscope.frontend.sink_hiding import HIDES, hidden_positions, hide_note
from attnscope.frontend.stale_note import register_counterfactual_link, register_stale_note
from attnscope.frontend.token_counter import register_token_counter

HEAD_LABEL = re.compile(r"^L(\d+)H(\d+)$")
RUNNING = "Running…"
THUMB_CELLS = 64  # model-view thumbnails: each head's map pooled (mean) to at most 64 x 64 (analysis.thumbnails)
# head-type badges need the census of every map (GET /runs/{id}/heads): about 0.1 s a head at 512 tokens but
# minutes for a 4,096-token SmolLM2 run, so longer runs show the grid without waiting for it
BADGE_TOKENS = 1024
THUMB_LAYERS = 6  # layers of thumbnails a read asks for above BADGE_TOKENS (each read a few seconds of API work)


register_token_counter("explore", "text-input", "model-dropdown")
register_stale_note("explore", "explore-run-data", "text-input", "model-dropdown")
register_counterfactual_link("explore", "explore-run-data", "text-input", "model-dropdown")


@callback(
    Output("model-dropdown", "options"),
    Output("model-dropdown", "value"),
    Output("api-status", "children"),
    Output("api-status", "className"),
    Input("explore-query", "data"),
    Input("explore-retry", "n_clicks"),
    State("run-store", "data"),
)
def load_models(query, _retry, stored):
    # grouped by task; vision models are on Vision
    return model_dropdown(query, stored, lambda models: model_options(models, "text"), lambda m: m.modality == "text")


@callback(
    Output("explore-run-data", "data"),
    Output("explore-run", "children"),
    Output("explore-error", "children"),
    Output("run-store", "data", allow_duplicate=True),
    Output("text-input", "value"),
    Input("explore-query", "data"),
    Input("explore-retry", "n_clicks"),
    State("run-store", "data"),
    prevent_initial_call="initial_duplicate",
)
def resolve(query, _retry, stored):
    """The run the page opens with: the address's (made again from model + text if the API forgot
    it), else the session's current run (navigation and reload keep the run), else none yet."""
    query = query or {}
    run, message = resolve_record(
        client(),
        query.get("run"),
        query.get("model"),
        query.get("text"),
        stored,
        thumbnails=True,
        example=query.get("example"),
    )
    if run is None:
        failed = bool(query.get("run") or (query.get("model") and (query.get("text") or query.get("example"))))
        about = "" if failed or message == NO_RUN else message  # a stored run this dashboard cannot read
        return None, about, message if failed else "", no_update, no_update
    share = run.to_store() if is_new(run, stored) else no_update
    return run.to_store(), message, "", share, run.text or no_update


@callback(
    Output("explore-run-data", "data", allow_duplicate=True),
    Input("run-store", "data"),
    State("explore-run-data", "data"),
    prevent_initial_call=True,
)
def follow_session_run(stored, shown):
    """A run made by another control of the page (Generate) becomes the page's run."""
    new, current = stored_run(stored), stored_run(shown)
    if not new or (current and current.id == new.id):
        return no_update
    return new.to_store()


@callback(
    Output("explore-run-data", "data", allow_duplicate=True),
    Output("run-store", "data"),
    Output("run-error", "children"),
    Input("run-button", "n_clicks"),
    State("text-input", "value"),
    State("model-dropdown", "value"),
    running=[(Output("run-button", "disabled"), True, False), (Output("run-button", "children"), RUNNING, "Run")],
    prevent_initial_call=True,
)
def create_run(n_clicks, text, model):
    store, error = run_text(n_clicks, model, text, thumbnails=True)  # the model view's, made with the run
    return store, store, error


def _thumb(layer: int, head: int, matrix: np.ndarray, scores, run: RunRecord, cls: str, selected: bool):
    label = head_label(layer, head, run.kv_head_of)  # L3H4, or L3 H4 (kv 1) under grouped-query attention
    badge, kinds = head_badge(scores, run.n_tokens)  # a sink at rest shows what it does with the rest ("sink›prev")
    src = causal_thumbnail_src(matrix) if run.causal else thumbnail_src(matrix)
    # the map is the button's background image, not an <img> child: one Dash component less for each of
    # the grid's heads (the renderer's cost on every update grows with the page's component count)
    children = [html.Span(badge, className="badge")] if badge else []
    return html.Button(
        children,
        className=f"{cls} selected" if selected else cls,
        title=f"{label} ({kinds}): click for detail",
        style={"backgroundImage": f"url({src})"},
        **{
            "aria-label": f"{label} {badge} ({kinds})" if badge else f"{label} ({kinds})",  # holds the badge's text
            "aria-pressed": "true" if selected else "false",
            "data-layer": layer,
            "data-head": head,
        },
    )


@callback(
    Output("model-grid", "children"),
    Output("layer-dropdown", "options"),
    Output("layer-dropdown", "value"),
    Output("head-checklist", "options"),
    Output("head-checklist", "value"),
    Output("selected-head", "data"),
    Output("head-detail", "figure", allow_duplicate=True),
    Output("detail-window", "data", allow_duplicate=True),
    Input("explore-run-data", "data"),
    Input("head-hide", "value"),
    Input("map-kind", "value"),
    State("explore-query", "data"),
    State("selected-head", "data"),
    State("head-scaling", "value"),
    prevent_initial_call="initial_duplicate",
)
def render_grid(data, hide, kind, query, current, scaling):
    """The model view of a run, and the selected head's detail drawn in the same response (a new run
    shows both after one round trip; the selection carries ``drawn`` so the detail is not fetched
    again). A new ``hide`` or map ``kind`` redraws the thumbnails only (the detail follows it by itself)."""
    run = stored_run(data)
    hide = hide if hide in HIDES else "none"
    hidden = hidden_positions(hide, run.n_tokens, run.special) if run else []
    if not run:
        hint = html.P("Run a text to see every head.", className="hint")
        return hint, [], None, [], [], None, empty_figure(DETAIL_HINT), {}
    n_layers, n_heads = run.n_layers, run.n_heads
    selected = initial_head(query or {}, current, n_layers, n_heads, run.id)
    n = run.n_tokens
    api = client()
    # every head's 64 x 64 mean-pooled map, computed once per run by the API (with the run when Explore made
    # it): one read, or for a long run a few layers a read (a run made elsewhere has them computed then, and
    # no read runs into the API's request deadline); the census (badges, up to BADGE_TOKENS) and the
    # selected head's detail side by side. The thumbnails are of the chosen map kind: the value-weighted
    # maps' run for value-weighted (the badges stay the weights' census)
    shown, kind_note = grid_run(api, run, kind)
    chunk = n_layers if n <= BADGE_TOKENS else THUMB_LAYERS
    thumbs = [FETCH.submit(api.thumbnails, shown.id, (a, min(a + chunk, n_layers))) for a in range(0, n_layers, chunk)]
    census = FETCH.submit(api.heads, run.id) if n <= BADGE_TOKENS else None
    only_thumbs = ctx.triggered_id in ("head-hide", "map-kind")
    layer0, head0 = selected
    detail = None if only_thumbs else FETCH.submit(detail_figure, api, run, layer0, head0, {}, scaling, hide, kind)
    try:
        layers = np.concatenate([hidden_thumbnails(t.result(), hidden) for t in thumbs])
    except ApiError as exc:
        return html.Div(str(exc), className="error"), [], None, [], [], None, empty_figure(str(exc)), {}
    types, note = {}, []
    if census is not None:
        try:
            types = {(h.layer, h.head_index): h for h in census.result().heads}
        except ApiError:  # badges are a bonus: the grid still shows without them
            pass
    else:
        note = [
            html.P(
                f"{n} tokens: no head-type badges here (above {BADGE_TOKENS} tokens the census of every map "
                "takes minutes); the Structure page computes them.",
                className="hint",
                id="grid-badges-note",
            )
        ]
    if kind_note:
        note.append(html.P(kind_note, className="hint", id="grid-kind-note"))
    if hidden:
        about = hide_note(hide, hidden, run.tokens, pooled=n > THUMB_CELLS)
        note.append(html.P(f"Thumbnails: {about}; hidden columns grey.", className="hint", id="grid-hide-note"))
    kv_of = run.kv_head_of
    order, starts = head_order(n_heads, kv_of), group_starts(n_heads, kv_of)  # query heads grouped by kv head
    col = lambda h: column_label(h, kv_of)  # noqa: E731
    gap = lambda h, base: f"{base} kv-group-start" if h in starts else base  # noqa: E731
    header = html.Div(
        className="grid-row grid-header",
        # a click on a thumbnail selects its head in the browser (assets/attnscope.js sets selected-head with
        # this run): no pattern-matching callback over the grid's 270 buttons for Dash to resolve each click
        **{"data-run": run.id},
        children=[html.Span("", className="row-label")]
        + [html.Span(col(h), className=gap(h, "col-label")) for h in order],
    )
    rows = (
        note
        + [header]
        + [
            html.Div(
                className="grid-row",
                children=[html.Span(f"L{l}", className="row-label")]
                + [
                    _thumb(l, h, layers[l][h], types.get((l, h)), run, gap(h, "head-thumb"), (l, h) == selected)
                    for h in order
                ],
            )
            for l in range(n_layers)
        ]
    )
    layer_opts = [{"label": f"layer {l}", "value": l} for l in range(n_layers)]
    head_opts = [{"label": col(h), "value": h} for h in order]
    layer = selected[0] if (query or {}).get("layer") is None else min(query["layer"], n_layers - 1)
    choice = {"layer": selected[0], "head": selected[1], "run": run.id, "drawn": True}
    # the head view shows the selected head (its layer); the address's layer, when another, shows all of it
    shown = [selected[1]] if layer == selected[0] else list(range(n_heads))
    if only_thumbs:
        return rows, *[no_update] * 7
    return rows, layer_opts, layer, head_opts, shown, choice, detail.result(), {}


def initial_head(query: dict, current: dict | None, n_layers: int, n_heads: int, run_id: str) -> tuple[int, int]:
    """The head a freshly drawn grid selects: the one already selected for this run, else the
    address's ``head`` (``L2H3``) when this model has it, else L0H0."""
    if current and current.get("run") == run_id:
        return current["layer"], current["head"]
    m = HEAD_LABEL.match(query.get("head") or "")
    if m and int(m[1]) < n_layers and int(m[2]) < n_heads:
        return int(m[1]), int(m[2])
    return 0, 0
