"""Explore's controls and panel for what heads write: the map kind of the head views (attention
weights or value-weighted, Kobayashi et al. 2020) and, for a causal LM, the panel of the prediction's
direct logit attribution (top heads), logit lens (over layers) and contribution graph (a threshold
control, a click on a node for its lens). Callbacks in
``pages/explore_writes.py``; computed only on request (one recorded forward of the run)."""

from __future__ import annotations

from dash import dcc, html

from attnscope.frontend.plot_config import graph

MAP_KINDS = ("attention", "value-weighted")
GRAPH_THRESHOLD = 0.04  # the contribution graph's edge threshold at first (the paper's tau)
MAP_KIND_LABELS = {"attention": "attention weights", "value-weighted": "value-weighted"}


def map_kind_control(value: str = "attention") -> html.Div:
    return html.Div(
        className="inline",
        children=[
            html.Label("Map", htmlFor="map-kind"),
            dcc.RadioItems(
                id="map-kind",
                value=value if value in MAP_KINDS else "attention",
                inline=True,
                className="head-checklist",
                options=[{"label": MAP_KIND_LABELS[k], "value": k} for k in MAP_KINDS],
            ),
        ],
    )


def writes_panel() -> html.Section:
    return html.Section(
        className="panel llm-hidden",
        id="writes-section",
        children=[
            html.H2("What heads write"),
            html.P(
                "For the prediction after the chosen position: the heads whose output writes the predicted token "
                "directly (direct logit attribution, the final norm frozen), and the logit lens (each layer's "
                "residual stream read through the final norm and unembedding). One recorded forward of the run, "
                "made when asked.",
                className="hint",
            ),
            html.Button("Explain the prediction", id="writes-button", n_clicks=0),
            html.Div(id="writes-error", className="error", **{"aria-live": "polite"}),
            html.Div(className="row", children=[graph("writes-dla"), graph("writes-lens")]),
            html.H3("Contribution graph"),
            html.P(
                "The routes the prediction was computed by (Ferrando and Voita 2024): from the predicted position at "
                "the top, the attention, residual and MLP edges whose importance reaches the threshold; a line's "
                "width is its importance. Click a node for the logit lens of its position.",
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
        ],
    )
