"""Census: dataset-level jobs (per-head statistics, per-layer probe) with progress and export.

Address: ``/census?kind=census&model=M&dataset=sst2&n=100&job=ID`` (a link with ``job`` reopens the
job: its progress while it runs, its result once done)."""

import dash
from dash import dash_table, dcc, html

from attnscope.frontend.data_status import data_status
from attnscope.frontend.example_table import examples_panel
from attnscope.frontend.page_common import control, error_box, panel
from attnscope.frontend.pages import census_callbacks  # noqa: F401  (registers this page's callbacks)
from attnscope.frontend.pages.census_callbacks import MAX_N, PARAMS
from attnscope.frontend.past_jobs import past_jobs_panel
from attnscope.frontend.plot_config import bare_graph
from attnscope.frontend.url_state import address_parts, parse_query

dash.register_page(__name__, path="/census", name="Census", order=3, title="attnscope · census")


def layout(**query):
    state, problems = parse_query(query, PARAMS)
    return html.Div(
        children=[
            dcc.Store(id="census-job"),
            dcc.Interval(id="census-poll", interval=800, disabled=True),
            dcc.Download(id="census-download"),
            *address_parts("census", state, problems),
            panel(
                "Run over a data set",
                (
                    "census: every head's shift score, best-offset mass, previous/next mass, entropy, top-1 mass, "
                    "distance and sink mass, as mean ± std over N examples. probe: for each layer, a "
                    "cross-validated "
                    "classifier predicting the label from that layer's maps alone (logistic regression on the "
                    "flattened maps, or a 2-layer CNN with one input channel per head)."
                ),
                html.Div(
                    className="controls",
                    children=[
                        control(
                            "Job",
                            dcc.Dropdown(
                                id="census-kind",
                                value=state["kind"],
                                clearable=False,
                                options=[
                                    {"label": "census", "value": "census"},
                                    {"label": "probe (logistic regression)", "value": "probe"},
                                    {"label": "probe (2-layer CNN)", "value": "probe-cnn"},
                                ],
                            ),
                        ),
                        control("Model", dcc.Dropdown(id="census-model", clearable=False)),
                        control(
                            "Data set",
                            dcc.Dropdown(
                                id="census-dataset",
                                options=[
                                    {"label": "SST-2 dev", "value": "sst2"},
                                    {"label": "movie reviews (Zaidan)", "value": "movies"},
                                ],
                                value=state["dataset"],
                                clearable=False,
                            ),
                        ),
                        control(
                            "N",
                            dcc.Input(id="census-n", type="number", min=1, max=MAX_N, step=1, value=state["n"]),
                            size="small",
                        ),
                        html.Button("Start", id="census-start", n_clicks=0, className="run-button"),
                        html.Button("Cancel", id="census-cancel", n_clicks=0, disabled=True, className="small-button"),
                        data_status("census"),
                        error_box("census"),
                    ],
                ),
                html.Div(
                    className="progress-row",
                    children=[
                        html.Progress(id="census-progress", max=1, value=0, className="progress"),
                        html.Span(id="census-status", className="hint"),
                    ],
                ),
            ),
            panel(
                "Results",
                None,
                html.Div(
                    className="inline",
                    children=[
                        html.Label("metric", htmlFor="census-metric"),
                        dcc.Dropdown(id="census-metric", className="wide-dropdown", clearable=False),
                        html.Button(
                            "Download CSV", id="census-csv", n_clicks=0, disabled=True, className="small-button"
                        ),
                        html.Button(
                            "Download JSON", id="census-json", n_clicks=0, disabled=True, className="small-button"
                        ),
                    ],
                ),
                bare_graph("census-figure"),
                dash_table.DataTable(
                    id="census-table",
                    page_size=12,
                    sort_action="native",
                    filter_action="native",
                    style_table={"overflowX": "auto"},
                    style_cell={"fontSize": 12, "padding": "3px"},
                ),
            ),
            examples_panel("census"),
            past_jobs_panel("census"),
        ]
    )
