"""Explore page panels for a run's output: the prediction panel (next tokens at a position, or a
classifier's classes) and, for causal LMs, the Generate panel with its step slider. Callbacks are in
``pages/explore_llm.py``."""

from __future__ import annotations

from dash import dcc, html

from attnscope.frontend.map_controls import hide_control, scaling_control
from attnscope.frontend.plot_config import graph
from attnscope.server.schemas import MAX_NEW_TOKENS


def prediction_panel() -> html.Section:
    return html.Section(
        className="panel half",
        id="prediction-section",
        children=[
            html.H2("Prediction"),
            html.P(
                "What the model outputs. Causal LMs: the most likely next tokens after the chosen position, "
                "the token that actually follows in orange with its loss.",
                id="prediction-hint",
                className="hint",
            ),
            html.Div(
                id="prediction-position-box",
                className="inline llm-hidden",
                children=[
                    html.Label("after position", htmlFor="prediction-position"),
                    dcc.Dropdown(id="prediction-position", clearable=False, className="wide-dropdown"),
                ],
            ),
            dcc.Store(id="prediction-store"),
            graph("prediction-figure"),
        ],
    )


def generate_panel(state: dict | None = None) -> html.Section:
    """``state``: the address's values (the step view's scaling and hidden keys)."""
    state = state or {}
    number = {"type": "number", "debounce": True, "className": "small-input"}
    return html.Section(
        className="panel half llm-hidden",
        id="generate-section",
        children=[
            html.H2("Generate"),
            html.P(
                "Continue the text with the causal LM, then step through the generated tokens: each one's "
                "attention row over the prompt and the tokens generated before it.",
                className="hint",
            ),
            html.Div(
                className="inline gen-controls",
                children=[
                    html.Label("max new tokens", htmlFor="gen-max-new"),
                    dcc.Input(id="gen-max-new", value=8, min=1, max=MAX_NEW_TOKENS, step=1, **number),
                    html.Label("decoding", htmlFor="gen-mode", className="sr-only"),
                    dcc.RadioItems(
                        id="gen-mode",
                        value="greedy",
                        inline=True,
                        options=[{"label": "greedy", "value": "greedy"}, {"label": "sample", "value": "sample"}],
                    ),
                    html.Label("temperature", htmlFor="gen-temperature"),
                    dcc.Input(id="gen-temperature", value=0.7, min=0.05, max=10, step=0.05, **number),
                    html.Label("seed", htmlFor="gen-seed"),
                    dcc.Input(id="gen-seed", value=0, min=0, step=1, **number),
                    html.Button("Generate", id="generate-button", n_clicks=0, className="run-button"),
                ],
            ),
            html.Div(id="generate-error", className="error", role="alert"),
            html.Div(id="gen-text", className="gen-text", **{"aria-live": "polite"}),
            html.Div(
                id="gen-step-box",
                className="llm-hidden",
                children=[
                    html.Div(
                        className="inline",
                        children=[
                            html.Label("step", htmlFor="gen-step", id="gen-step-label"),
                            # a native range input: labelled, arrow keys step one token
                            dcc.Input(
                                id="gen-step",
                                type="range",
                                min=1,
                                max=1,
                                step=1,
                                value=1,
                                list="gen-step-marks",
                                className="gen-slider",
                            ),
                            html.Datalist(id="gen-step-marks"),
                            html.Label("layer", htmlFor="gen-layer"),
                            dcc.Dropdown(id="gen-layer", clearable=False, className="small-dropdown"),
                        ],
                    ),
                    scaling_control("gen-scaling", state.get("step_scaling") or "global"),
                    hide_control("gen-hide", state.get("step_hide") or "none"),
                    graph("gen-step-figure"),
                ],
            ),
        ],
    )


def llm_panels(state: dict | None = None) -> html.Div:
    """The row under the controls: prediction beside generation (``state``: the address's values)."""
    return html.Div(className="row", children=[prediction_panel(), generate_panel(state)])
