"""What every page shares: the API client of the running app, an empty figure that carries a
message, an error box with a Retry button, a panel with its heading and hint (``panel``), and the
labelled controls of a page's controls row (``control``, ``model_picker``)."""

from __future__ import annotations

import plotly.graph_objects as go
from dash import dcc, html
from flask import current_app

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.plot_config import message_figure


def client() -> ApiClient:
    """The API client of the running Dash app (set up in ``create_dash_app``)."""
    return current_app.config["ATTNSCOPE_CLIENT"]


def empty_figure(message: str, height: int = 320) -> go.Figure:
    """A blank figure whose only content is ``message`` (wrapped at 70 characters: never cut off at
    the sides), ``height`` px tall."""
    return message_figure(message, width=70, height=height)


def panel(title: str, hint, *children, half: bool = False) -> html.Section:
    """A page's panel: the heading ``title``, a hint paragraph (``hint``; None: none), then
    ``children``; ``half`` puts two panels side by side in a row."""
    head = [html.H2(title)] + ([html.P(hint, className="hint")] if hint is not None else [])
    return html.Section(className="panel half" if half else "panel", children=[*head, *children])


def control(label: str, field, *after, size: str = "") -> html.Div:
    """One control of a page's controls row: ``label`` (for ``field.id``), ``field`` (a dropdown,
    a text area, an input), then ``after`` (e.g. a token counter). ``size``: ``""``, ``"grow"``
    (takes the row's free width) or ``"small"``."""
    return html.Div(
        className=f"control {size}" if size else "control",
        children=[html.Label(label, htmlFor=field.id), field, *after],
    )


def model_picker(control_id: str, label: str = "Model", placeholder: str = "loading models…") -> html.Div:
    """The model dropdown ``control_id`` (its options come from the page's callbacks)."""
    return control(label, dcc.Dropdown(id=control_id, clearable=False, placeholder=placeholder))


def error_box(page_id: str) -> html.Div:
    """The page's error region: a message (``{page_id}-error``, ``role=alert``) and a Retry button
    (``{page_id}-retry``) that the page's callbacks take as an ``Input``. Hidden while empty."""
    return html.Div(
        className="error-box",
        id=f"{page_id}-error-box",
        children=[
            html.Span(id=f"{page_id}-error", className="error", role="alert"),
            html.Button("Retry", id=f"{page_id}-retry", n_clicks=0, className="small-button retry-button"),
        ],
    )


def describe_error(exc: ApiError, what: str) -> str:
    """``exc`` in the page's terms: what failed, and what to do about it."""
    if exc.status == 503:
        return f"{what}: the API is not answering ({exc.detail}). It is retried by the banner above; or press Retry."
    if exc.status == 404:
        return f"{what}: {exc.detail}"
    return f"{what}: {exc.detail}"
