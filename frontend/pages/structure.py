"""Structure: shift heads and their implied kernels, sharpening across layers, rollout and flow.

Address: ``/structure?run=ID&model=M&text=T&k=8&threshold=0.5&head=L0H2&hide=first&compare=M2&through=5
&map=value-weighted``."""

import dash
from dash import dcc, html

from attnscope.frontend.map_controls import hide_control
from attnscope.frontend.page_common import error_box, panel
from attnscope.frontend.pages import (
    structure_callbacks,  # noqa: F401  (registers this page's callbacks)
    structure_maps,
    structure_progress,
)
from attnscope.frontend.pages.structure_callbacks import PARAMS
from attnscope.frontend.pages.structure_effects import effects_panel
from attnscope.frontend.pages.structure_heads import head_types_panel
from attnscope.frontend.pages.structure_progress import progress_line
from attnscope.frontend.plot_config import graph
from attnscope.frontend.url_state import address_parts, parse_query

dash.register_page(__name__, path="/structure", name="Structure", order=2, title="attnscope · structure")


def layout(**query):
    state, problems = parse_query(query, PARAMS)
    return html.Div(
        children=[
            dcc.Store(id="shift-data"),
            dcc.Store(id="structure-run-data"),
            dcc.Store(id="structure-maps-data"),  # the run whose maps the map panels read (structure_maps)
            dcc.Store(id="structure-head"),
            *address_parts("structure", state, problems),
            html.Div(
                className="panel hint structure-banner",
                children=[
                    html.Span(id="structure-run"),
                    *structure_progress.controls(),
                    *structure_maps.controls(state["map"]),
                ],
            ),
            error_box("structure"),
            html.Div(
                className="row",
                children=[
                    panel(
                        "Shift heads",
                        (
                            "Each cell: the head's best offset (key − query) and, as colour, how much it beats the "
                            "runner-up. [CLS]/[SEP] rows and columns are left out. Click a cell for its kernel."
                        ),
                        html.Div(
                            className="inline",
                            children=[
                                html.Label("offsets ±", htmlFor="shift-k"),
                                dcc.Input(
                                    id="shift-k",
                                    type="number",
                                    min=1,
                                    max=64,
                                    step=1,
                                    value=state["k"],
                                    debounce=True,
                                    className="small-input",
                                ),
                                html.Label("threshold", htmlFor="shift-threshold"),
                                dcc.Input(
                                    id="shift-threshold",
                                    type="number",
                                    min=0,
                                    max=1,
                                    step=0.05,
                                    value=state["threshold"],
                                    debounce=True,
                                    className="small-input",
                                ),
                            ],
                        ),
                        progress_line("shift"),
                        graph("shift-grid"),
                        half=True,
                    ),
                    panel(
                        "Implied convolution",
                        None,
                        hide_control("structure-hide", state["hide"]),
                        progress_line("kernel"),
                        graph("kernel-figure"),
                        graph("kernel-head-map"),
                        half=True,
                    ),
                ],
            ),
            head_types_panel(),
            panel(
                "Evolution across layers",
                None,
                html.Div(
                    className="inline",
                    children=[
                        html.Label("compare with", htmlFor="compare-model"),
                        dcc.Dropdown(
                            id="compare-model",
                            value=state["compare"],
                            placeholder="another model on the same text",
                            className="wide-dropdown",
                        ),
                    ],
                ),
                html.Div(id="evolution-error", className="error", role="alert"),
                progress_line("evolution"),
                html.Div(
                    className="row",
                    children=[
                        html.Div(graph("evolution-figure"), className="half"),
                        html.Div(graph("entropy-heatmap"), className="half"),
                    ],
                ),
            ),
            panel(
                "Rollout and flow",
                None,
                html.Div(
                    className="inline",
                    children=[
                        html.Label("through layer", htmlFor="importance-layer"),
                        dcc.Dropdown(id="importance-layer", clearable=False, className="small-dropdown"),
                    ],
                ),
                html.Div(id="importance-note", className="hint"),
                progress_line("importance"),
                graph("importance-figure"),
                html.Div(id="importance-grid"),
            ),
            effects_panel(),
        ]
    )
