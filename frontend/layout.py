"""Page layout: controls, the model view (layer x head grid), head detail and head view."""

from __future__ import annotations

from dash import dcc, html

EXAMPLE = "The quick brown fox jumps over the lazy dog because the dog was asleep."


def controls() -> html.Div:
    return html.Div(className="controls", children=[
        html.Div(className="control", children=[
            html.Label("Model", htmlFor="model-dropdown"),
            dcc.Dropdown(id="model-dropdown", clearable=False, placeholder="loading models…"),
        ]),
        html.Div(className="control grow", children=[
            html.Label("Text", htmlFor="text-input"),
            dcc.Textarea(id="text-input", value=EXAMPLE, rows=3, className="text-input",
                         placeholder="Type a sentence to see its attention"),
        ]),
        html.Button("Run", id="run-button", n_clicks=0, className="run-button"),
        html.Div(id="run-error", className="error", role="alert"),
        html.Div(id="api-status", className="api-status"),
    ])


def model_view() -> html.Section:
    return html.Section(className="panel", children=[
        html.H2("Model view"),
        html.P("Every layer × head of the run, each thumbnail scaled to its own maximum. Click a head "
               "for its detail.", className="hint"),
        dcc.Loading(html.Div(id="model-grid", className="model-grid"), type="dot"),
    ])


def detail_views() -> html.Div:
    return html.Div(className="row", children=[
        html.Section(className="panel half", children=[
            html.H2("Head detail"),
            dcc.Loading(dcc.Graph(id="head-detail", config={"displaylogo": False}), type="dot"),
        ]),
        html.Section(className="panel half", children=[
            html.H2("Head view"),
            html.Div(className="inline", children=[
                html.Label("Layer", htmlFor="layer-dropdown"),
                dcc.Dropdown(id="layer-dropdown", clearable=False, className="small-dropdown"),
            ]),
            dcc.Checklist(id="head-checklist", inline=True, className="head-checklist"),
            dcc.Loading(dcc.Graph(id="head-view", config={"displaylogo": False}), type="dot"),
        ]),
    ])


def page() -> html.Div:
    return html.Div(className="page", children=[
        dcc.Location(id="url"),
        dcc.Store(id="run-store"),
        dcc.Store(id="selected-head"),
        html.Header(className="header", children=[
            html.H1("attnscope"),
            html.Span("what the attention heads of a transformer do", className="tagline"),
        ]),
        controls(),
        model_view(),
        detail_views(),
    ])
