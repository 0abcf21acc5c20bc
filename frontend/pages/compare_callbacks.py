"""Callbacks of the compare page; all data from the API over HTTP (``ApiClient``)."""

from __future__ import annotations

import re

import numpy as np
from dash import ALL, Input, Output, State, callback, ctx, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.compare_figures import (
    diff_map_figure,
    diff_thumbnail_src,
    js_grid_figure,
    mismatch_note,
    pair_labels,
    restrict_map,
    share_colour_range,
)
from attnscope.frontend.compare_pair import ComparePair, shown_pair
from attnscope.frontend.figures import head_detail_figure
from attnscope.frontend.map_kind import notes
from attnscope.frontend.page_common import client, describe_error, empty_figure
from attnscope.frontend.plot_config import SCALINGS
from attnscope.frontend.run_record import RunRecord
from attnscope.frontend.run_state import run_record
from attnscope.frontend.sink_hiding import HIDES, hidden_positions, hide_map, hide_note, with_note
from attnscope.frontend.token_counter import register_token_counter
from attnscope.frontend.url_state import Param, query_string, register_url_sync
from attnscope.frontend.writes_layout import MAP_KINDS

EXAMPLE_A = "The cat sat on the mat because it was tired."
EXAMPLE_B = "The dog sat on the mat because it was tired."
PARAMS = {
    "model_a": Param(str, max_len=100),
    "text_a": Param(str),
    "model_b": Param(str, max_len=100),
    "text_b": Param(str),
    "a": Param(str, max_len=64),
    "b": Param(str, max_len=64),
    "head": Param(str, max_len=12),
    "scaling": Param(str, default="global", choices=SCALINGS),
    "align": Param(bool, default=False),
    "hide": Param(str, default="none", choices=HIDES),
    "map": Param(str, default="attention", choices=MAP_KINDS),  # the map kind of every map of the page
}
HEAD_LABEL = re.compile(r"^L(\d+)H(\d+)$")
register_url_sync("compare")
for _side in ("a", "b"):
    register_token_counter(f"compare-{_side}", f"compare-text-{_side}", f"compare-model-{_side}")


@callback(
    Output("compare-model-a", "options"),
    Output("compare-model-a", "value"),
    Output("compare-model-b", "options"),
    Output("compare-model-b", "value"),
    Output("compare-status", "children"),
    Output("compare-status", "className"),
    Input("compare-query", "data"),
)
def load_models(query):
    query = query or {}
    try:
        listing = client().models()
    except ApiError as exc:
        return [], None, [], None, describe_error(exc, "The model list could not be loaded"), "notice"
    names = [m.name for m in listing.models if m.modality == "text"]
    notes, picked = [], []
    for side in ("a", "b"):
        wanted = query.get(f"model_{side}")
        if wanted and wanted not in names:
            notes.append(f"Model {side.upper()} '{wanted}' is not a text model of this API; using {listing.default}.")
            wanted = None
        picked.append(wanted or (picked[0] if picked else listing.default))
    note = " ".join(notes)
    return names, picked[0], names, picked[1], note or f"API {client().base_url}", "notice" if note else "api-status"


def _make_run(model: str, text: str, run_id: str | None) -> RunRecord:
    """The run named in the address when the API still has it for this model and text, else a new
    one (runs are keyed by content: the same model and text give the same id)."""
    if run_id:
        try:
            run = run_record(client().run(run_id))
            if run.model == model and run.text == text:
                return run
        except ApiError as exc:
            if exc.status != 404:
                raise
    return run_record(client().create_run(model, text))


@callback(
    Output("compare-pair", "data"),
    Output("compare-error", "children"),
    Output("compare-mismatch", "children"),
    Input("compare-run", "n_clicks"),
    Input("compare-model-b", "value"),
    Input("compare-retry", "n_clicks"),
    Input("compare-align", "value"),
    State("compare-model-a", "value"),
    State("compare-text-a", "value"),
    State("compare-text-b", "value"),
    State("compare-query", "data"),
    running=[
        (Output("compare-run", "disabled"), True, False),
        (Output("compare-run", "children"), "Comparing…", "Compare"),
    ],
)
def compare_runs(n_clicks, model_b, _retry, align, model_a, text_a, text_b, query):
    """Run both sides (Compare pressed, or on open) and fetch the per-head divergences. Texts of
    different token counts are a note next to the counters (Retry cannot change them) unless
    ``align`` asks for the comparison on their aligned tokens."""
    if not model_a or not model_b:
        return no_update, no_update, no_update
    if ctx.triggered_id == "compare-model-b" and n_clicks:
        return no_update, no_update, no_update  # a new model B is compared when Compare is pressed
    query, aligned = query or {}, "align" in (align or [])
    try:
        run_a = _make_run(model_a, text_a or "", query.get("a"))
        run_b = _make_run(model_b, text_b or "", query.get("b"))
        if len(run_a.tokens) != len(run_b.tokens) and not aligned:
            return None, "", mismatch_note(len(run_a.tokens), len(run_b.tokens))
        cmp = client().compare_heads(run_a.id, run_b.id, align=aligned)
    except ApiError as exc:
        if exc.status == 422:  # the runs themselves cannot be compared: retrying gives the same answer
            return None, "", f"A and B cannot be compared: {exc.detail}. Retry cannot help; change a text or a model."
        return None, describe_error(exc, "Comparing A with B failed"), ""
    pair = ComparePair(
        a=run_a,
        b=run_b,
        js=cmp.js,
        tv=cmp.tv,
        max_abs_diff=cmp.max_abs_diff,
        positions_a=cmp.positions_a if aligned else None,
        positions_b=cmp.positions_b if aligned else None,
    )
    return pair.model_dump(mode="json"), "", ""


def _thumb(layer: int, head: int, src: str, js: float, selected: bool) -> html.Button:
    label = f"L{layer}H{head}"
    return html.Button(
        [html.Img(src=src, alt=f"{label}: A − B")],
        id={"type": "compare-thumb", "layer": layer, "head": head},
        className="head-thumb selected" if selected else "head-thumb",
        title=f"{label}: JS {js:.4f} bits; click for A and B side by side",
        n_clicks=0,
        **{"aria-pressed": "true" if selected else "false", "data-layer": layer, "data-head": head},
    )


@callback(
    Output("compare-grid", "children"),
    Output("compare-js", "figure"),
    Output("compare-scale", "children"),
    Output("compare-about", "children"),
    Output("compare-head", "data"),
    Output("compare-shown", "data"),
    Input("compare-pair", "data"),
    Input("compare-map-kind", "value"),
    State("compare-query", "data"),
    State("compare-head", "data"),
)
def render_grids(data, kind, query, selected):
    """The A − B and JS grids of the chosen map kind (``shown_pair``, kept in ``compare-shown`` for the
    head detail); a new comparison selects the address's head (else the one that moved most), a new
    kind keeps the selected head."""
    original = ComparePair.from_store(data)
    if not original:
        message = "Pick two models and two texts (same number of tokens), then press Compare."
        return html.P(message, className="hint"), empty_figure(message), "", "", None, None
    pair = shown_pair(client(), original, kind)
    a, b = pair.a, pair.b
    n_layers, n_heads = a.n_layers, a.n_heads
    try:
        diffs = [
            restrict_map(client().attention(a.id, l), pair.positions_a)
            - restrict_map(client().attention(b.id, l), pair.positions_b)
            for l in range(n_layers)
        ]  # [layer][head, query, key] (query, key: the aligned positions when aligned)
    except ApiError as exc:
        error = html.P(describe_error(exc, "The maps could not be loaded"), className="error")
        return error, no_update, "", "", None, None
    scale = float(max(np.abs(d).max() for d in diffs)) or 1e-12
    layer, head = 0, 0
    m = HEAD_LABEL.match((query or {}).get("head") or "")
    js = np.asarray(pair.js)
    if ctx.triggered_id == "compare-map-kind" and selected:
        layer, head = selected["layer"], selected["head"]
    elif m and int(m[1]) < n_layers and int(m[2]) < n_heads:
        layer, head = int(m[1]), int(m[2])
    else:
        layer, head = (int(i) for i in np.unravel_index(js.argmax(), js.shape))  # the head that moved most
    header = html.Div(
        className="grid-row grid-header",
        children=[html.Span("", className="row-label")]
        + [html.Span(f"H{h}", className="col-label") for h in range(n_heads)],
    )
    rows = [header] + [
        html.Div(
            className="grid-row",
            children=[html.Span(f"L{l}", className="row-label")]
            + [
                _thumb(l, h, diff_thumbnail_src(diffs[l][h], scale), js[l, h], (l, h) == (layer, head))
                for h in range(n_heads)
            ],
        )
        for l in range(n_layers)
    ]
    about = (
        f"A: run {original.a.id} · {a.model} · “{a.text}”   B: run {original.b.id} · {b.model} · “{b.text}”. "
        f"Largest JS: L{js.argmax() // n_heads}H{js.argmax() % n_heads} ({js.max():.4f} bits)."
    )
    if pair.positions_a is not None:
        about += (
            f" Compared on {len(pair.positions_a)} aligned tokens (of A's {len(a.tokens)} and B's "
            f"{len(b.tokens)}), each row renormalised over them."
        )
    if pair.note:
        about += f" Maps: {pair.note}."
    scale_note = f"Colour scale: ±{scale:.3f} (white = equal, red = A attends more, blue = B attends more)."
    shown = pair.model_dump(mode="json")
    return rows, js_grid_figure(pair.js), scale_note, about, {"layer": layer, "head": head}, shown


@callback(
    Output("compare-head", "data", allow_duplicate=True),
    Input({"type": "compare-thumb", "layer": ALL, "head": ALL}, "n_clicks"),
    Input("compare-js", "clickData"),
    prevent_initial_call=True,
)
def select_head(clicks, click):
    trigger = ctx.triggered_id
    if trigger == "compare-js":
        if not click or not click.get("points"):
            return no_update
        point = click["points"][0]
        return {"layer": int(str(point["y"])[1:]), "head": int(str(point["x"])[1:])}
    if not trigger or not any(clicks or []):
        return no_update
    return {"layer": trigger["layer"], "head": trigger["head"]}


@callback(
    Output("compare-detail-a", "figure"),
    Output("compare-detail-b", "figure"),
    Output("compare-detail-diff", "figure"),
    Output("compare-head-title", "children"),
    Input("compare-head", "data"),
    Input("compare-scaling", "value"),
    Input("compare-hide", "value"),
    Input("compare-shown", "data"),
)
def render_heads(selected, scaling, hide, data):
    """The selected head's A, B and A − B maps of the shown kind (``compare-shown``), the hidden keys
    blanked; the kind and the hidden keys stated under each title."""
    pair = ComparePair.from_store(data)
    if not pair or not selected:
        blank = empty_figure("Compare two runs, then click a head.")
        return blank, blank, empty_figure(""), "Head detail, A and B side by side"
    layer, head = selected["layer"], selected["head"]
    label = f"L{layer}H{head}"
    a, b = pair.a, pair.b
    try:
        wa = restrict_map(client().attention(a.id, layer, head, encoding="json"), pair.positions_a)
        wb = restrict_map(client().attention(b.id, layer, head, encoding="json"), pair.positions_b)
    except ApiError as exc:
        blank = empty_figure(describe_error(exc, f"The maps of {label} could not be loaded"))
        return blank, blank, empty_figure(""), label
    js = pair.js[layer][head]
    scaling = scaling if scaling in SCALINGS else "global"
    tokens_a, tokens_b = pair.tokens()
    hide = hide if hide in HIDES else "none"  # the same keys blanked in A, B and A − B, rows renormalised
    hid_a, hid_b = _hidden(a, pair.positions_a, hide), _hidden(b, pair.positions_b, hide)
    wa, wb = hide_map(wa, hid_a), hide_map(wb, hid_b)
    note_a = hide_note(hide, hid_a, tokens_a, pooled=False)
    note_b = hide_note(hide, hid_b, tokens_b, pooled=False)
    title_a = with_note(f"A · {label} · {a.model}", notes(pair.note, note_a))
    title_b = with_note(f"B · {label} · {b.model}", notes(pair.note, note_b))
    fig_a = head_detail_figure(wa, tokens_a, title_a, scaling=scaling)
    fig_b = head_detail_figure(wb, tokens_b, title_b, scaling=scaling)
    share_colour_range(fig_a, fig_b)  # one colour scale: equal colours are equal weights in A and B
    hidden_note = note_a if hid_a == hid_b else f"A: {note_a}; B: {note_b}"
    diff_title = with_note(f"A − B · {label}", notes(pair.note, hidden_note))
    return (
        fig_a,
        fig_b,
        diff_map_figure(wa - wb, pair_labels(tokens_a, tokens_b), diff_title),
        f"{label}: A and B side by side, one colour scale (JS {js:.4f} bits)",
    )


def _hidden(run: RunRecord, positions: list[int] | None, hide: str) -> list[int]:
    """The keys ``hide`` blanks in ``run``'s map as shown: its positions, or (compared on aligned tokens)
    the indices into ``positions`` of the hidden ones."""
    hidden = hidden_positions(hide, run.n_tokens, run.special)
    return hidden if positions is None else [i for i, p in enumerate(positions) if p in hidden]


@callback(
    Output("compare-url", "data"),
    Input("compare-pair", "data"),
    Input("compare-head", "data"),
    Input("compare-scaling", "value"),
    Input("compare-hide", "value"),
    Input("compare-map-kind", "value"),
    prevent_initial_call=True,
)
def to_address(data, selected, scaling, hide, kind):
    pair = ComparePair.from_store(data)
    if not pair:
        return no_update
    a, b = pair.a, pair.b
    values = {
        "model_a": a.model,
        "text_a": a.text,
        "model_b": b.model,
        "text_b": b.text,
        "a": a.id,
        "b": b.id,
        "head": f"L{selected['layer']}H{selected['head']}" if selected else None,
        "scaling": scaling,
        "hide": hide,
        "map": kind,
        "align": pair.positions_a is not None,
    }
    return query_string(values, PARAMS)
