"""Measure: tokens as particles through the layers, W1 per layer, Lipschitz bound vs estimate,
fixed-point iteration of a (shared) block. Vuckovic et al.; docs/methods/markov-kernel.md."""

import dash
from dash import dcc, html

from attnscope.frontend.layout import EXAMPLE
from attnscope.frontend.page_common import control, error_box, model_picker, panel
from attnscope.frontend.pages import measure_callbacks  # noqa: F401  (registers this page's callbacks)
from attnscope.frontend.pages.measure_callbacks import PARAMS
from attnscope.frontend.plot_config import bare_graph
from attnscope.frontend.stale_note import stale_note
from attnscope.frontend.token_counter import token_counter
from attnscope.frontend.url_state import address_parts, parse_query

dash.register_page(__name__, path="/measure", name="Measure", order=5, title="attnscope · measure")

BOUND_NOTE = (
    "The bound is DERIVED (our own derivation, not the paper's theorem): token measures in the ball B_R "
    "(R = the largest token norm of the layer's input), W1 with the Euclidean cost, the map "
    "Φ(μ) = (F_μ)#μ with F_μ the attention sublayer (all heads, Q/K/V biases, W_O and its bias; no "
    "residual, no LayerNorm). L̂ is the largest W1 ratio found by random and gradient-ascent "
    "perturbations inside B_R: a lower bound on the true constant, so L̂ ≤ L must hold."
)


def _controls(state: dict) -> html.Div:
    return html.Div(
        className="controls",
        children=[
            dcc.Store(id="measure-init", data=0),
            model_picker("measure-model"),
            control(
                "Text",
                dcc.Textarea(id="measure-text", value=state["text"] or EXAMPLE, rows=2, className="text-input"),
                token_counter("measure"),
                size="grow",
            ),
            html.Button("Run", id="measure-run-button", n_clicks=0, className="run-button"),
            html.Div(id="measure-error", className="error", role="alert"),
            error_box("measure-run"),
            html.Div(id="measure-status", className="api-status"),
            html.Div(id="measure-run-about", className="hint"),
            stale_note("measure"),
        ],
    )


def _particles(state: dict) -> html.Div:
    return html.Div(
        className="row",
        children=[
            panel(
                "Particle view",
                (
                    "Each token is a point; the slider (or ▶ play) moves through the depths. One PCA is "
                    "fitted on every depth together, so motion in the picture is motion of the token."
                ),
                html.Label("dimensions", htmlFor="particle-dims", className="sr-only"),
                dcc.RadioItems(
                    id="particle-dims",
                    options=[{"label": "2D", "value": 2}, {"label": "3D", "value": 3}],
                    value=state["dims"],
                    inline=True,
                ),
                bare_graph("particle-view"),
                half=True,
            ),
            panel(
                "W1 per layer",
                "How far each layer moves the token measure: W1(μ_l, μ_l+1), exact (assignment).",
                bare_graph("w1-profile"),
                html.Div(id="maxent-summary", className="hint"),
                half=True,
            ),
        ],
    )


def _lipschitz_and_fixed_point() -> html.Div:
    return html.Div(
        className="row",
        children=[
            panel(
                "Lipschitz constant per layer",
                BOUND_NOTE,
                html.Button("Compute for every layer", id="lipschitz-button", n_clicks=0, className="run-button"),
                dcc.Store(id="lipschitz-state"),
                dcc.Store(id="lipschitz-next"),
                dcc.Store(id="lipschitz-kick"),
                html.Div(
                    className="progress-row",
                    children=[
                        html.Progress(id="lipschitz-progress", max=1, value=0, className="progress"),
                        html.Span(id="lipschitz-status", className="hint", **{"aria-live": "polite"}),
                    ],
                ),
                bare_graph("lipschitz-panel"),
                half=True,
            ),
            panel(
                "Infinite depth with shared weights",
                (
                    "Iterate a block past its trained depth and watch W1 between successive iterates. "
                    "HA models iterate their shared block; for other models pick a layer: its block is "
                    "iterated with its own weights (a demonstration, not a weight-sharing model). For HA "
                    "blocks, the lower panel sets the DERIVED fixed-key bound along the orbit (max-token "
                    "metric, which dominates W1) against the observed step ratios; L < 1 is the contraction "
                    "condition."
                ),
                html.Div(
                    className="inline",
                    children=[
                        html.Label("Block", htmlFor="fixed-point-block"),
                        dcc.Dropdown(id="fixed-point-block", clearable=False, className="small-dropdown"),
                        html.Label("Steps", htmlFor="fixed-point-steps"),
                        dcc.Input(
                            id="fixed-point-steps", type="number", min=1, max=500, value=30, style={"width": "70px"}
                        ),
                        html.Button("Iterate", id="fixed-point-button", n_clicks=0, className="run-button"),
                    ],
                ),
                bare_graph("fixed-point-view"),
                html.Div(id="fixed-point-summary", className="hint"),
                half=True,
            ),
        ],
    )


def layout(**query) -> html.Div:
    state, problems = parse_query(query, PARAMS)
    return html.Div(
        children=[
            dcc.Store(id="measure-run-data"),
            *address_parts("measure", state, problems),
            _controls(state),
            _particles(state),
            _lipschitz_and_fixed_point(),
        ]
    )
