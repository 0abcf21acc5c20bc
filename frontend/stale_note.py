"""A note that marks a page's results as stale: shown as soon as the text box or the model picker no
longer holds what the shown run was made from (``assets/attnscope.js`` ``staleNote``, in the
browser: no request per keystroke), gone again when they match or a new run arrives."""

from __future__ import annotations

from dash import ClientsideFunction, Input, Output, clientside_callback, html


def stale_note(prefix: str) -> html.Div:
    """``{prefix}-stale``: empty (hidden) until the inputs and the shown run differ."""
    return html.Div(id=f"{prefix}-stale", className="notice empty", role="status")


def counterfactual_link(prefix: str) -> html.A:
    """``{prefix}-counterfactual``: hidden until the text box holds an edit of the shown run's text on
    the same model; then a link to Compare with the run's text as A and the edit as B (issue 26 item 11:
    edit an example into a counterfactual and compare the two)."""
    return html.A(
        "Compare the shown run with this edited text",
        id=f"{prefix}-counterfactual",
        href="/compare",
        className="counterfactual-link empty",
    )


def register_counterfactual_link(prefix: str, run_data_id: str, text_id: str, model_id: str) -> None:
    """Keep ``counterfactual_link(prefix)``'s address and visibility up to date, in the browser."""
    clientside_callback(
        ClientsideFunction(namespace="attnscope", function_name="counterfactualLink"),
        Output(f"{prefix}-counterfactual", "href"),
        Output(f"{prefix}-counterfactual", "className"),
        Input(text_id, "value"),
        Input(model_id, "value"),
        Input(run_data_id, "data"),
    )


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
