"""A note that marks a page's results as stale: shown as soon as the text box or the model picker no
longer holds what the shown run was made from (``assets/attnscope.js`` ``staleNote``, in the
browser: no request per keystroke), gone again when they match or a new run arrives."""

from __future__ import annotations

from dash import ClientsideFunction, Input, Output, clientside_callback, html


def stale_note(prefix: str) -> html.Div:
    """``{prefix}-stale``: empty (hidden) until the inputs and the shown run differ."""
    return html.Div(id=f"{prefix}-stale", className="notice empty", role="status")


def register_stale_note(prefix: str, run_data_id: str, text_id: str, model_id: str) -> None:
    """Keep ``stale_note(prefix)`` up to date from the text box ``text_id``, the model dropdown
    ``model_id`` and the store ``run_data_id`` (a ``RunRecord.to_store()`` dict, or empty)."""
    clientside_callback(
        ClientsideFunction(namespace="attnscope", function_name="staleNote"),
        Output(f"{prefix}-stale", "children"),
        Output(f"{prefix}-stale", "className"),
        Input(text_id, "value"),
        Input(model_id, "value"),
        Input(run_data_id, "data"),
    )
