"""Faithfulness: is attention explanation? Explainers side by side on one text, ERASER curves and
metrics; and the explainer x metric table over a data set (a background job on the API).

Address: ``/faithfulness?model=M&text=T&convention=eraser&k=0.2&explainers=attention,random``
(a link with ``text`` explains it on open) ``&dataset=sst2&n=10&job=ID`` (reopens the data-set job)."""

import dash
from dash import dash_table, dcc, html

from attnscope.frontend.data_status import data_status
from attnscope.frontend.example_table import examples_panel
from attnscope.frontend.page_common import control, model_picker, panel
from attnscope.frontend.pages import faithfulness_callbacks  # noqa: F401  (registers this page's callbacks)
from attnscope.frontend.pages.faithfulness_callbacks import EXAMPLE, PARAMS, explainer_list
from attnscope.frontend.past_jobs import past_jobs_panel
from attnscope.frontend.plot_config import bare_graph
from attnscope.frontend.url_state import address_parts, parse_query
from attnscope.server.schemas.faithfulness import DEFAULT_EXPLAINERS

dash.register_page(__name__, path="/faithfulness", name="Faithfulness", order=4, title="attnscope · faithfulness")

TABLE_STYLE = {
    "style_table": {"overflowX": "auto", "maxWidth": "100%"},
    "style_cell": {"fontFamily": "system-ui", "fontSize": 13, "padding": "3px 5px", "whiteSpace": "normal"},
    # headers wrap: the explainer x metric table fits its half-width panel (it was clipped on the right)
    "style_header": {"fontWeight": "600", "background": "#eef1f5", "whiteSpace": "normal", "height": "auto"},
}


def _controls(state: dict) -> html.Div:
    return html.Div(
        className="controls",
        children=[
            model_picker("faith-model", "Classifier"),
            control(
                "Text (mark the human rationale with [[double brackets]])",
                dcc.Textarea(id="faith-text", value=state["text"] or EXAMPLE, rows=3, className="text-input"),
                size="grow",
            ),
            html.Div(
                className="control",
                children=[
                    html.Label("Convention", htmlFor="faith-convention"),
                    dcc.RadioItems(
                        id="faith-convention",
                        value=state["convention"],
                        inline=True,
                        options=[{"label": c, "value": c} for c in ("eraser", "eraser-paper", "ferret")],
                    ),
                    html.Label("k (hard rationale, fraction of tokens)", htmlFor="faith-k"),
                    dcc.Input(id="faith-k", type="number", min=0.01, max=1, step=0.01, value=state["k"]),
                ],
            ),
            control(
                "Explainers",
                dcc.Checklist(
                    id="faith-explainers",
                    value=explainer_list(state["explainers"]) or list(DEFAULT_EXPLAINERS),
                    inline=True,
                    className="head-checklist",
                    options=[{"label": e, "value": e} for e in DEFAULT_EXPLAINERS],
                ),
                size="grow",
            ),
            html.Div(
                className="control grow",
                children=[
                    html.Label("Raw attention explainer"),
                    html.Div(
                        className="inline",
                        children=[
                            html.Label("layer (−1 = last)", htmlFor="faith-attn-layer", className="hint"),
                            dcc.Input(id="faith-attn-layer", type="number", step=1, value=-1, style={"width": "60px"}),
                            html.Label("heads", htmlFor="faith-attn-heads", className="hint"),
                            dcc.Input(
                                id="faith-attn-heads",
                                type="text",
                                placeholder="all, or e.g. 0,3,7",
                                debounce=True,
                                style={"width": "130px"},
                            ),
                            html.Label("row", htmlFor="faith-attn-row", className="hint"),
                            dcc.RadioItems(
                                id="faith-attn-row",
                                value="cls",
                                inline=True,
                                className="head-checklist",
                                options=[
                                    {"label": "[CLS] row", "value": "cls"},
                                    {"label": "mean of rows", "value": "mean"},
                                ],
                            ),
                        ],
                    ),
                ],
            ),
            html.Button("Explain", id="faith-run", n_clicks=0, className="run-button"),
            html.Div(id="faith-error", className="error", role="alert"),
        ],
    )


def _example_panels() -> list:
    return [
        panel(
            "Token scores",
            (
                "Red: evidence for the explained class, blue: against; each row scaled to its own maximum. "
                "Underlined: the human rationale. Outlined: the top-k hard rationale."
            ),
            dcc.Loading(html.Div(id="faith-highlights", className="faith-highlights"), type="dot"),
        ),
        html.Div(
            className="row",
            children=[
                panel(
                    "Comprehensiveness and sufficiency over the bins",
                    None,
                    bare_graph("faith-curves", loading=False),
                    half=True,
                ),
                panel(
                    "Metrics",
                    None,
                    html.Div(id="faith-summary", className="hint"),
                    dash_table.DataTable(id="faith-table", **TABLE_STYLE),
                    half=True,
                ),
            ],
        ),
    ]


def _dataset_panel(state: dict) -> html.Section:
    return panel(
        "Data set: explainer x metric",
        (
            "Runs as a background job on the API (POST /jobs, kind faithfulness), with progress. Movie "
            "reviews (Zaidan) carry human rationales; they are truncated to the model's 512 tokens. "
            "HateXplain (3 classes, annotator rationales) needs the opt-in below."
        ),
        html.Div(
            className="inline",
            children=[
                html.Label("Data set", htmlFor="faith-dataset"),
                dcc.Dropdown(
                    id="faith-dataset",
                    value=state["dataset"],
                    clearable=False,
                    className="small-dropdown",
                    options=[
                        {"label": "SST-2 dev", "value": "sst2"},
                        {"label": "movie reviews", "value": "movies"},
                        {"label": "HateXplain test", "value": "hatexplain"},
                    ],
                ),
                html.Label("n", htmlFor="faith-n"),
                dcc.Input(id="faith-n", type="number", min=1, max=2000, value=state["n"], style={"width": "80px"}),
                html.Button("Start", id="faith-job-start", n_clicks=0, className="run-button"),
                html.Progress(id="faith-progress", value="0", max="1", style={"width": "220px"}),
                html.Span(id="faith-job-status", className="hint"),
            ],
        ),
        data_status("faith"),
        html.Label("HateXplain opt-in", htmlFor="faith-allow-offensive", className="sr-only"),
        dcc.Checklist(
            id="faith-allow-offensive",
            value=[],
            className="hint",
            options=[
                {
                    "label": " HateXplain holds hate speech: I opt in (the table shows metrics only, "
                    "never the posts; use the minilm-hatexplain classifier)",
                    "value": "yes",
                }
            ],
        ),
        html.Div(id="faith-job-error", className="error", role="alert"),
        html.Div(id="faith-dataset-summary", className="hint"),
        dash_table.DataTable(id="faith-dataset-table", **TABLE_STYLE),
        html.Button("Export CSV", id="faith-export", n_clicks=0, disabled=True),
        dcc.Download(id="faith-download"),
    )


def layout(**query):
    state, problems = parse_query(query, PARAMS)
    return html.Div(
        children=[
            dcc.Store(id="faith-result"),
            dcc.Store(id="faith-job"),
            dcc.Store(id="faith-shown-job"),  # the job whose result the data-set table shows
            dcc.Interval(id="faith-poll", interval=1000, disabled=True),
            *address_parts("faith", state, problems),
            html.Div(id="faith-notes", className="notice empty", role="status"),
            _controls(state),
            *_example_panels(),
            _dataset_panel(state),
            examples_panel("faith"),
            past_jobs_panel("faith"),
        ]
    )
