"""Workspace: the runs the database holds, every session's (``GET /api/v1/runs``): named, pinned,
opened in Explore (or Vision), two of them compared, deleted after a confirmation.

Address: ``/workspace?q=WORDS&pinned=true&offset=50``."""

import dash
from dash import dcc, html

from attnscope.frontend.page_common import error_box
from attnscope.frontend.pages import workspace_callbacks  # noqa: F401  (registers this page's callbacks)
from attnscope.frontend.pages.workspace_callbacks import PARAMS
from attnscope.frontend.url_state import address_parts, parse_query

dash.register_page(__name__, path="/workspace", name="Workspace", order=7, title="attnscope · workspace")


def layout(**query):
    state, problems = parse_query(query, PARAMS)
    return html.Div(
        children=[
            *address_parts("workspace", state, problems),
            dcc.Store(id="workspace-refresh", data=0),
            dcc.Store(id="workspace-items"),
            dcc.Store(id="workspace-pending"),  # the run waiting for its delete to be confirmed
            html.Div(
                className="controls",
                children=[
                    html.Div(
                        className="control grow",
                        children=[
                            html.Label("Find", htmlFor="workspace-q"),
                            dcc.Input(
                                id="workspace-q",
                                value=state["q"] or "",
                                placeholder="words of a run's name or text",
                                debounce=True,
                                type="search",
                            ),
                        ],
                    ),
                    html.Div(
                        className="control",
                        # names the checklist for assistive technology (attnscope.js: nameControls)
                        title="Show pinned runs only",
                        children=dcc.Checklist(
                            id="workspace-pinned",
                            options=[{"label": " pinned only", "value": "pinned"}],
                            value=["pinned"] if state["pinned"] else [],
                        ),
                    ),
                    html.Button("Refresh", id="workspace-reload", n_clicks=0, className="small-button"),
                    error_box("workspace"),
                ],
            ),
            html.Section(
                className="panel",
                children=[
                    html.H2("Runs"),
                    html.P(
                        "Every run made on this server, in any session, is kept here (its input; the maps are "
                        "computed again when it is opened). Pinned runs come first, then the newest. Tick two "
                        "text runs to compare them.",
                        className="hint",
                    ),
                    html.Div(
                        id="workspace-compare-bar",
                        className="row",
                        children=[
                            dcc.Link(
                                "Compare the two ticked runs", id="workspace-compare", href="", className="hidden"
                            ),
                            html.Span(id="workspace-compare-hint", className="hint"),
                        ],
                    ),
                    html.Div(
                        id="workspace-confirm",
                        className="notice empty",
                        role="alertdialog",
                        **{"aria-labelledby": "workspace-confirm-text"},
                        children=[
                            html.P(id="workspace-confirm-text"),
                            html.Button("Delete run", id="workspace-confirm-yes", n_clicks=0, className="small-button"),
                            html.Button("Cancel", id="workspace-confirm-no", n_clicks=0, className="small-button"),
                        ],
                    ),
                    html.Div(id="workspace-message", role="status", className="hint"),
                    dcc.Loading(html.Div(id="workspace-table"), type="dot"),
                    html.Div(
                        className="row",
                        children=[
                            html.Button("Previous", id="workspace-prev", n_clicks=0, className="small-button"),
                            html.Span(id="workspace-count", className="hint"),
                            html.Button("Next", id="workspace-next", n_clicks=0, className="small-button"),
                        ],
                    ),
                ],
            ),
        ]
    )
