"""Layout of the explore page (controls, model view, head detail, head view); the shell every page
shares is in ``shell.py``."""

from __future__ import annotations

from dash import dcc, html

from attnscope.frontend.llm_layout import llm_panels

EXAMPLE = "The quick brown fox jumps over the lazy dog because the dog was asleep."


def controls() -> html.Div:
    return html.Div(
        className="controls",
        children=[
            html.Div(
                className="control",
                children=[
                    html.Label("Model", htmlFor="model-dropdown"),
                    dcc.Dropdown(id="model-dropdown", clearable=False, placeholder="loading models…"),
                ],
            ),
            html.Div(
                className="control grow",
                children=[
                    html.Label("Text", htmlFor="text-input"),
                    dcc.Textarea(
                        id="text-input",
                        value=EXAMPLE,
                        rows=3,
                        className="text-input",
                        placeholder="Type a sentence to see its attention",
                    ),
                ],
            ),
            html.Button("Run", id="run-button", n_clicks=0, className="run-button"),
            html.Div(id="run-error", className="error", role="alert"),
            html.Div(id="api-status", className="api-status"),
        ],
    )


def model_view() -> html.Section:
    return html.Section(
        className="panel",
        children=[
            html.H2("Model view"),
            html.P(
                "Every layer × head of the run, each thumbnail scaled to its own maximum. Click a head for its detail.",
                className="hint",
            ),
            dcc.Loading(html.Div(id="model-grid", className="model-grid"), type="dot"),
        ],
    )


def detail_views() -> html.Div:
    return html.Div(
        className="row",
        children=[
            html.Section(
                className="panel half",
                children=[
                    html.H2("Head detail"),
                    dcc.Loading(dcc.Graph(id="head-detail", config={"displaylogo": False}), type="dot"),
                ],
            ),
            html.Section(
                className="panel half",
                children=[
                    html.H2("Head view"),
                    html.Div(
                        className="inline",
                        children=[
                            html.Label("Layer", htmlFor="layer-dropdown"),
                            dcc.Dropdown(id="layer-dropdown", clearable=False, className="small-dropdown"),
                        ],
                    ),
                    html.Label("Heads shown", htmlFor="head-checklist", className="sr-only"),
                    dcc.Checklist(id="head-checklist", inline=True, className="head-checklist"),
                    dcc.Loading(dcc.Graph(id="head-view", config={"displaylogo": False}), type="dot"),
                ],
            ),
        ],
    )


def explore_page() -> html.Div:
    """The explore page: pick a model, run a text, browse every head."""
    return html.Div(children=[dcc.Store(id="selected-head"), controls(), llm_panels(), model_view(), detail_views()])
