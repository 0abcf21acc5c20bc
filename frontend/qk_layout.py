"""Layout of Explore's "why this head attends" panel (``docs/methods/qk-attribution.md``): a query
position (and a key, else the query's strongest), the QK attribution of the selected head there as a
query-part x key-part heatmap and key-side shares, the query/key product by dimension, and the
composition scores of the selected head and between every pair of layers. Its callbacks are in
``pages/explore_qk.py``."""

from __future__ import annotations

from dash import dcc, html

from attnscope.frontend.page_common import panel
from attnscope.frontend.plot_config import graph_config

QK_MODES = ("q", "k", "v")
QK_HINT = "Click a cell of the head detail, or type a query position, to see why the selected head attends there."


def _position(input_id: str, label: str, value, placeholder: str) -> html.Div:
    return html.Div(
        className="inline",
        children=[
            html.Label(label, htmlFor=input_id),
            dcc.Input(id=input_id, type="number", min=0, step=1, value=value, debounce=True, placeholder=placeholder),
        ],
    )


def qk_views(state: dict) -> html.Section:
    """The panel, its controls set from the address ``state`` (``qk_query``, ``qk_key``, ``qk_mode``)."""
    mode = state.get("qk_mode") if state.get("qk_mode") in QK_MODES else "k"
    return panel(
        "Why this head attends",
        (
            "The selected head's score at (query, key) split exactly into what earlier parts wrote at the query "
            "and at the key (norms frozen at their clean scales; the terms sum to the score), and its "
            "composition with the earlier heads from the weights. Computed for one query row only."
        ),
        html.Div(
            className="inline",
            children=[
                _position("qk-query", "Query position", state.get("qk_query"), "click a cell"),
                _position("qk-key", "Key position", state.get("qk_key"), "strongest"),
                html.Label("Composition", htmlFor="qk-mode"),
                dcc.RadioItems(
                    id="qk-mode",
                    value=mode,
                    inline=True,
                    className="head-checklist",
                    options=[{"label": f"{m.upper()}-composition", "value": m} for m in QK_MODES],
                ),
            ],
        ),
        html.Div(QK_HINT, id="qk-note", className="hint", **{"aria-live": "polite"}),
        dcc.Loading(
            html.Div(
                className="row",
                children=[
                    html.Div(dcc.Graph(id="qk-matrix", config=graph_config("attnscope-qk-matrix")), className="half"),
                    html.Div(
                        dcc.Graph(id="qk-key-parts", config=graph_config("attnscope-qk-key-parts")), className="half"
                    ),
                    html.Div(dcc.Graph(id="qk-product", config=graph_config("attnscope-qk-product")), className="half"),
                    html.Div(
                        dcc.Graph(id="qk-composition", config=graph_config("attnscope-qk-composition")),
                        className="half",
                    ),
                    html.Div(
                        dcc.Graph(id="qk-composition-layers", config=graph_config("attnscope-qk-composition-layers")),
                        className="half",
                    ),
                ],
            ),
            type="dot",
            delay_show=300,
        ),
    )
