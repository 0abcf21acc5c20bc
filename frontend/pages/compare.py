"""Compare: two texts on one model, or one text on two models with the same layer/head shape.
The A − B grid (every head's difference map on one symmetric diverging scale), the per-head
Jensen-Shannon grid, and the selected head's maps side by side.

Address: ``/compare?model_a=M&text_a=T&model_b=M2&text_b=T2&a=RUN&b=RUN&head=L0H2&hide=first&map=value-weighted``
(runs are made again from model + text when the API forgot them; ``map``: every map of the page drawn
from A's and B's value-weighted maps)."""

import dash
from dash import dcc, html

from attnscope.frontend.map_controls import hide_control, scaling_control
from attnscope.frontend.page_common import error_box, panel
from attnscope.frontend.pages import compare_callbacks  # noqa: F401  (registers this page's callbacks)
from attnscope.frontend.pages.compare_callbacks import EXAMPLE_A, EXAMPLE_B, PARAMS
from attnscope.frontend.plot_config import graph
from attnscope.frontend.token_counter import token_counter
from attnscope.frontend.url_state import address_parts, parse_query
from attnscope.frontend.writes_layout import map_kind_control

dash.register_page(__name__, path="/compare", name="Compare", order=1.5, title="attnscope · compare")


def _side(side: str, text: str) -> html.Div:
    upper = side.upper()
    return html.Div(
        className="control grow",
        children=[
            html.Label(f"Model {upper}", htmlFor=f"compare-model-{side}"),
            dcc.Dropdown(id=f"compare-model-{side}", clearable=False, placeholder="loading models…"),
            html.Label(f"Text {upper}", htmlFor=f"compare-text-{side}"),
            dcc.Textarea(id=f"compare-text-{side}", value=text, rows=2, className="text-input"),
            token_counter(f"compare-{side}"),
        ],
    )


def layout(**query):
    state, problems = parse_query(query, PARAMS)
    return html.Div(
        children=[
            dcc.Store(id="compare-pair"),
            dcc.Store(id="compare-head"),
            dcc.Store(id="compare-shown"),  # the pair whose maps are drawn (the chosen map kind)
            *address_parts("compare", state, problems),
            html.Div(
                className="controls",
                children=[
                    _side("a", state["text_a"] or EXAMPLE_A),
                    _side("b", state["text_b"] or EXAMPLE_B),
                    html.Div(
                        className="control",
                        # names the checklist for assistive technology (attnscope.js: nameControls)
                        title="Alignment of the two inputs",
                        children=[
                            dcc.Checklist(
                                id="compare-align",
                                options=[{"label": " Compare by aligned tokens", "value": "align"}],
                                value=["align"] if state["align"] else [],
                                className="head-checklist",
                            ),
                            html.Div(id="compare-mismatch", className="notice", role="status"),
                        ],
                    ),
                    # every map of the page (A − B grid, A, B, A − B): the weights or the value-weighted maps
                    html.Div(className="control", children=[map_kind_control(state["map"], "compare-map-kind")]),
                    html.Button("Compare", id="compare-run", n_clicks=0, className="run-button"),
                    html.Div(id="compare-status", className="api-status"),
                    error_box("compare"),
                ],
            ),
            html.Div(id="compare-about", className="panel hint"),
            html.Div(
                className="row compare-grids",
                children=[
                    panel(
                        "A − B per head",
                        (
                            "Each thumbnail: the head's map of A minus its map of B, red where A attends "
                            "more, blue where B does; one symmetric scale for the whole grid. Click a head."
                        ),
                        html.Div(id="compare-scale", className="hint"),
                        dcc.Loading(html.Div(id="compare-grid", className="model-grid"), type="dot"),
                        half=True,
                    ),
                    panel(
                        "Jensen-Shannon divergence per head",
                        (
                            "Mean over query rows of JS(A row, B row), in bits: 0 = the same attention, "
                            "1 = disjoint. Click a cell for its head."
                        ),
                        graph("compare-js"),
                        half=True,
                    ),
                ],
            ),
            html.Section(
                className="panel",
                children=[
                    html.H2(id="compare-head-title", children="Head detail, A and B side by side"),
                    html.Div(
                        className="inline",
                        children=[
                            scaling_control("compare-scaling", state["scaling"]),
                            hide_control("compare-hide", state["hide"]),
                        ],
                    ),
                    html.Div(
                        className="row",
                        children=[
                            html.Div(graph("compare-detail-a"), className="half"),
                            html.Div(graph("compare-detail-b"), className="half"),
                        ],
                    ),
                    graph("compare-detail-diff"),
                ],
            ),
        ]
    )
