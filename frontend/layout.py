"""Layout of the explore page (controls, model view, head detail, head view); the shell every page
shares is in ``shell.py``."""

from __future__ import annotations

from dash import dcc, html

from attnscope.frontend.llm_layout import llm_panels
from attnscope.frontend.map_controls import hide_control, scaling_control
from attnscope.frontend.page_common import control, error_box, model_picker, panel
from attnscope.frontend.plot_config import export_bar, graph_config
from attnscope.frontend.qk_layout import qk_views
from attnscope.frontend.stale_note import counterfactual_link, stale_note
from attnscope.frontend.token_counter import token_counter
from attnscope.frontend.token_view import token_view
from attnscope.frontend.url_state import address_parts
from attnscope.frontend.writes_layout import dla_panel, map_kind_control, writes_panel

# the explore views show their busy dots only when an update takes longer than this: a 0.1 s head click
# then redraws once, not twice (the spinner in, the spinner out)
LOADING_DELAY_MS = 300


def _busy(child):
    """``child`` with the explore views' busy dots (after ``LOADING_DELAY_MS``)."""
    return dcc.Loading(child, type="dot", delay_show=LOADING_DELAY_MS)


EXAMPLE = "The quick brown fox jumps over the lazy dog because the dog was asleep."


def controls(text: str | None = None) -> html.Div:
    return html.Div(
        className="controls",
        children=[
            model_picker("model-dropdown"),
            control(
                "Text",
                dcc.Textarea(
                    id="text-input",
                    value=text or EXAMPLE,
                    rows=3,
                    className="text-input",
                    placeholder="Type a sentence to see its attention",
                ),
                size="grow",
            ),
            html.Button("Run", id="run-button", n_clicks=0, className="run-button"),
            token_counter("explore"),
            html.Div(id="run-error", className="error", role="alert"),
            stale_note("explore"),
            counterfactual_link("explore"),
            html.Div(id="api-status", className="api-status"),
        ],
    )


def model_view() -> html.Section:
    return panel(
        "Model view",
        (
            "Every layer × head of the run, each thumbnail scaled to its own maximum. Click a head for its "
            "detail; with a head focused, the arrow keys move through the grid."
        ),
        html.Div(id="explore-run", className="hint"),
        _busy(html.Div(id="model-grid", className="model-grid")),
    )


def detail_views(scaling: str = "global", hide: str = "none", kind: str = "attention") -> html.Div:
    return html.Div(
        className="row",
        children=[
            panel(
                "Head detail",
                (
                    "Long inputs open as a pooled overview (each cell the maximum of a block); "
                    "drag a box to zoom into a token window at full resolution, double-click to reset."
                ),
                scaling_control("head-scaling", scaling),
                hide_control("head-hide", hide),
                map_kind_control(kind),
                _busy(dcc.Graph(id="head-detail", config=graph_config("attnscope-head-detail"))),
                html.Div(id="head-detail-hover", className="hint", **{"aria-live": "polite"}),
                export_bar("head-detail"),
                half=True,
            ),
            panel(
                "Head view",
                None,
                html.Div(
                    className="inline",
                    children=[
                        html.Label("Layer", htmlFor="layer-dropdown"),
                        dcc.Dropdown(id="layer-dropdown", clearable=False, className="small-dropdown"),
                    ],
                ),
                html.Label("Heads shown", htmlFor="head-checklist", className="sr-only"),
                dcc.Checklist(id="head-checklist", inline=True, className="head-checklist"),
                _busy(dcc.Graph(id="head-view", config=graph_config("attnscope-head-view"))),
                export_bar("head-view", ("svg", "png", "json")),
                half=True,
            ),
        ],
    )


def explore_page(state: dict | None = None, problems: list[str] | None = None) -> html.Div:
    """The explore page: pick a model, run a text, browse every head. ``state``: the address's
    values (``explore_callbacks.PARAMS``), ``problems``: what in the address was not usable."""
    state = state or {}
    return html.Div(
        children=[
            dcc.Store(id="selected-head"),
            dcc.Store(id="explore-run-data"),
            dcc.Store(id="detail-window"),  # the head detail's token window {rows, cols}; {} = all
            dcc.Store(id="detail-zoom"),  # the head detail's last zoom or reset (its relayout's axis ranges)
            *address_parts("explore", state, problems or []),
            controls(state.get("text")),
            error_box("explore"),
            llm_panels(state),
            writes_panel(state),
            html.Div(className="row model-and-dla", children=[model_view(), dla_panel()]),  # DLA beside the grid
            detail_views(
                state.get("scaling") or "global", state.get("hide") or "none", state.get("map") or "attention"
            ),
            token_view(state),
            qk_views(state),
        ]
    )
