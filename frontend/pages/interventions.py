"""Interventions: ablate heads of the current run and see the prediction change and the maps after;
the per-head effect grid beside attention-based importance.

Address: ``/interventions?run=ID&model=M&text=T&heads=L0H1,L3H2&method=zero``."""

import dash
from dash import dcc, html

from attnscope.frontend.page_common import error_box, panel
from attnscope.frontend.pages import interventions_callbacks  # noqa: F401  (registers this page's callbacks)
from attnscope.frontend.pages.interventions_callbacks import METHODS, PARAMS
from attnscope.frontend.plot_config import graph
from attnscope.frontend.url_state import address_parts, parse_query

dash.register_page(__name__, path="/interventions", name="Interventions", order=6, title="attnscope · interventions")


def layout(**query):
    state, problems = parse_query(query, PARAMS)
    ablate = panel(
        "Ablate heads",
        "Heads as L{layer}H{head}, separated by commas, or click cells of the effect grid below. "
        "zero: the head's output is 0; mean: its mean output over 16 reference sentences; "
        "uniform: it attends uniformly to every key it may see.",
        html.Div(
            className="inline",
            children=[
                html.Label("heads", htmlFor="interventions-heads"),
                dcc.Input(
                    id="interventions-heads",
                    type="text",
                    value=state["heads"] or "",
                    placeholder="L0H1, L3H2",
                    debounce=True,
                    className="wide-input",
                ),
                html.Label("ablation", htmlFor="interventions-method"),
                dcc.Dropdown(
                    id="interventions-method",
                    options=[{"label": m, "value": m} for m in METHODS],
                    value=state["method"],
                    clearable=False,
                    className="small-dropdown",
                ),
                html.Button("Apply", id="interventions-apply", n_clicks=0, className="small-button"),
            ],
        ),
        html.Div(id="interventions-result", className="result-line", role="status"),
        _pair("interventions-clean-map", "interventions-altered-map"),
    )
    effects = panel(
        "Per-head effects",
        "One ablation per head (the chosen kind), batched. Beside it: each head's attention-based "
        "importance (mean over rows of its largest weight) against the size of its effect.",
        html.Button("Compute the grid", id="interventions-grid-button", n_clicks=0, className="small-button"),
        html.Div(id="interventions-grid-note", className="hint", role="status"),
        _pair("interventions-grid", "interventions-importance"),
    )
    return html.Div(
        children=[
            *address_parts("interventions", state, problems),
            dcc.Store(id="interventions-run-data"),
            dcc.Store(id="interventions-grid-data"),
            html.Div(id="interventions-run", className="panel hint"),
            error_box("interventions"),
            ablate,
            effects,
        ]
    )


def _pair(left: str, right: str) -> html.Div:
    """Two figures side by side."""
    return html.Div(className="row", children=[html.Div(graph(g), className="half") for g in (left, right)])
