"""Explore's controls and panels for what heads write: the map kind of the head views (attention
weights or value-weighted, Kobayashi et al. 2020); for a causal LM the logit lens of a position (a
layers x top-k grid and the target's rank by layer, opened by a click on a token of the strip or by
the position menu, its k and target in the address), the contribution graph (a threshold control, a
click on a node for its lens) and, beside the model view, the bar of each head's share of the
prediction's direct logit attribution with the clicked head's split over source tokens. Callbacks in
``pages/explore_writes.py`` and ``pages/explore_lens.py``; computed only on request (one recorded
forward of the run, kept by the API)."""

from __future__ import annotations

from dash import dcc, html

from attnscope.frontend.plot_config import graph
from attnscope.server.schemas import MAX_LENS_K

MAP_KINDS = ("attention", "value-weighted")
GRAPH_THRESHOLD = 0.04  # the contribution graph's edge threshold at first (the paper's tau)
MAP_KIND_LABELS = {"attention": "attention weights", "value-weighted": "value-weighted"}
LENS_K = 5  # top tokens per layer in the lens grid at first
TOKEN_WINDOW = 96  # tokens in the strip: the whole text up to this, else a window around the position


def map_kind_control(value: str = "attention", control_id: str = "map-kind") -> html.Div:
    """The map kind radio (attention weights | value-weighted), ``control_id`` its id."""
    return html.Div(
        className="inline",
        children=[
            html.Label("Map", htmlFor=control_id),
            dcc.RadioItems(
                id=control_id,
                value=value if value in MAP_KINDS else "attention",
                inline=True,
                className="head-checklist",
                options=[{"label": MAP_KIND_LABELS[k], "value": k} for k in MAP_KINDS],
            ),
        ],
    )


def token_window(n: int, position: int | None, width: int = TOKEN_WINDOW) -> tuple[int, int]:
    """``(start, stop)`` of the strip: every position when ``n <= width``, else ``width`` positions
    around ``position`` (default the last), kept inside ``[0, n)``."""
    if n <= width:
        return 0, n
    pos = n - 1 if position is None or not 0 <= position < n else position
    start = min(max(0, pos - width // 2), n - width)
    return start, start + width


def token_strip(tokens: list[str], position: int | None, width: int = TOKEN_WINDOW) -> list:
    """One button per position of the window (``{"type": "lens-token", "pos": i}``): a click opens the
    logit lens of the prediction after it; ``position``'s button is pressed."""
    start, stop = token_window(len(tokens), position, width)
    out = [html.Span(f"… {start} tokens before", className="hint")] if start else []
    for i in range(start, stop):
        on = i == position
        out.append(
            html.Button(
                tokens[i],
                id={"type": "lens-token", "pos": i},
                n_clicks=0,
                className="lens-token selected" if on else "lens-token",
                title=f"position {i}: the logit lens of the prediction after it",
                **{"aria-pressed": "true" if on else "false", "aria-label": f"position {i} {tokens[i]}"},
            )
        )
    if stop < len(tokens):
        out.append(html.Span(f"… {len(tokens) - stop} tokens after", className="hint"))
    return out


def lens_controls(k: int | None, target: str | None) -> html.Div:
    number = {"type": "number", "debounce": True, "className": "small-input"}
    return html.Div(
        className="inline",
        children=[
            html.Label("top k", htmlFor="lens-k"),
            dcc.Input(id="lens-k", value=k or LENS_K, min=1, max=MAX_LENS_K, step=1, **number),
            html.Label("target token", htmlFor="lens-target"),
            dcc.Input(
                id="lens-target",
                type="text",
                value=target or "",
                debounce=True,
                placeholder="the model's own next token",
                className="wide-input",
            ),
            html.Button("Close the lens", id="lens-close", n_clicks=0, className="small-button"),
        ],
    )


def writes_panel(state: dict | None = None) -> html.Section:
    """The lens and contribution graph panel; ``state``: the address's values (``lens_k``,
    ``lens_target``: a lens open from a copied link)."""
    state = state or {}
    opened = state.get("lens_k") is not None or bool(state.get("lens_target"))
    return html.Section(
        className="panel llm-hidden",
        id="writes-section",
        children=[
            html.H2("What heads write"),
            html.P(
                "Click a token for the logit lens of the prediction after it: each layer's residual stream read "
                "through the final norm and unembedding, its top tokens with their probabilities, and the target's "
                "rank by layer (the position menu of the Prediction panel does the same from the keyboard). "
                "'Explain the prediction' also attributes it to the heads (beside the model view) and draws its "
                "contribution graph. One recorded forward of the run, made when first asked.",
                className="hint",
            ),
            dcc.Store(id="lens-open", data=opened),
            html.Div(id="lens-tokens", className="lens-tokens", role="group", **{"aria-label": "tokens"}),
            lens_controls(state.get("lens_k"), state.get("lens_target")),
            html.Button("Explain the prediction", id="writes-button", n_clicks=0),
            html.Div(id="writes-error", className="error", **{"aria-live": "polite"}),
            graph("writes-lens"),
            html.H3("Contribution graph"),
            html.P(
                "The routes the prediction was computed by (Ferrando and Voita 2024): from the predicted position at "
                "the top, the attention, residual and MLP edges whose importance reaches the threshold; a line's "
                "width is its importance. Click a node for the logit lens of its position. The graph follows the "
                "prediction position (the menu, or a click on a token).",
                className="hint",
            ),
            html.Div(
                className="inline",
                children=[
                    html.Label("edge threshold", htmlFor="writes-threshold"),
                    # a native range input: labelled, arrow keys step 0.01 (no debounce: dcc.Input's debounce
                    # sets a text selection, which a range input refuses with a console error)
                    dcc.Input(
                        id="writes-threshold",
                        type="range",
                        min=0.01,
                        max=0.5,
                        step=0.01,
                        value=GRAPH_THRESHOLD,
                        className="gen-slider",
                    ),
                    html.Span(id="writes-threshold-value", children=f"{GRAPH_THRESHOLD:.2f}"),
                ],
            ),
            html.Div(id="writes-graph-error", className="error", **{"aria-live": "polite"}),
            html.Div(className="row", children=[graph("writes-graph"), graph("writes-node-lens")]),
            dcc.Store(id="writes-graph-of"),  # {"run": id, "position": p} of the graph drawn, if any
        ],
    )


def dla_panel() -> html.Section:
    """Beside the model view: each head's share of the prediction's direct logit attribution, and the
    clicked head's (a bar, or a thumbnail of the grid) split over its source tokens."""
    return html.Section(
        className="panel llm-hidden dla-panel",
        id="dla-section",
        children=[
            html.H2("Direct logit attribution"),
            html.P(
                "Each head's share of what the heads write directly into the predicted token's logit after the "
                "chosen position (final norm frozen): its part over the sum of every head's |part|. Click a bar, "
                "or a head in the grid, for what each source token sent through it; the head selected in the "
                "grid is outlined on its bar and named in the title.",
                className="hint",
            ),
            html.Button("Attribute the prediction", id="dla-button", n_clicks=0, className="small-button"),
            dcc.Store(id="dla-store"),  # {run, position, target_id}: the attribution shown, for the split
            dcc.Store(id="dla-click-applied"),
            html.Div(id="dla-error", className="error", **{"aria-live": "polite"}),
            graph("writes-dla"),
            html.H3("Source tokens of the selected head", id="dla-split-title"),
            html.Div(id="dla-split", className="dla-split", **{"aria-live": "polite"}),
        ],
    )
