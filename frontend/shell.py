"""What every page shares: header, navigation, the API-down banner, the current run (kept for the
browser session) and the ``main`` landmark around the page."""

from __future__ import annotations

import dash
from dash import Input, Output, callback, dcc, html

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client

HEALTH_EVERY_MS = 10_000  # while the API answers
RETRY_EVERY_MS = 3_000  # while it does not: the banner retries by itself this often


def api_banner() -> html.Div:
    """Hidden while the API answers; otherwise says so, retries every few seconds, and has a Retry."""
    return html.Div(
        id="api-banner",
        className="api-banner hidden",
        children=[
            dcc.Interval(id="api-health-poll", interval=HEALTH_EVERY_MS),
            html.Span(id="api-banner-text", role="alert"),
            html.Button("Retry now", id="api-banner-retry", n_clicks=0, className="small-button"),
        ],
    )


@callback(
    Output("api-banner", "className"),
    Output("api-banner-text", "children"),
    Output("api-health-poll", "interval"),
    Input("api-health-poll", "n_intervals"),
    Input("api-banner-retry", "n_clicks"),
)
def check_api(_tick, _retry):
    try:
        client().health()
    except ApiError as exc:
        return (
            "api-banner",
            f"The attnscope API is not answering ({exc.detail}). Retrying every {RETRY_EVERY_MS // 1000} s; "
            "pages show their data again once it is back (press Retry on a page).",
            RETRY_EVERY_MS,
        )
    return "api-banner hidden", "", HEALTH_EVERY_MS


def shell(api_docs: str = "/docs") -> html.Div:
    """The page frame; ``api_docs``: the address of the API's Swagger UI (linked in the header)."""
    links = [
        dcc.Link(p["name"], href=p["relative_path"], className="nav-link")
        for p in sorted(dash.page_registry.values(), key=lambda p: p.get("order") or 0)
    ]
    # the REST API's interactive docs (Swagger UI, served by the API itself): every number here is a route
    links.append(
        html.A(
            "API docs",
            href=api_docs,
            target="_blank",
            rel="noopener",
            className="nav-link",
            title="the REST API behind every page (Swagger UI), in a new tab",
        )
    )
    return html.Div(
        className="page",
        children=[
            dcc.Location(id="url"),
            dcc.Store(id="run-store", storage_type="session"),
            html.Header(
                className="header",
                children=[
                    html.H1("attnscope"),
                    html.Span("what the attention heads of a transformer do", className="tagline"),
                    html.Nav(links, className="nav", **{"aria-label": "pages"}),
                ],
            ),
            api_banner(),
            html.Main(dash.page_container, id="main"),
        ],
    )
