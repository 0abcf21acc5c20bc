"""The model dropdown and the Run button of the pages that run a text (Explore, Measure): which
model the dropdown shows (``pick_model``, ``model_dropdown``) and what a press of Run makes
(``run_text``). Everything comes from the API over HTTP."""

from __future__ import annotations

from collections.abc import Callable

from dash import no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client, describe_error
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.run_state import run_record
from attnscope.server.schemas import ModelPublic


def pick_model(names: list[str], wanted: str | None, stored: str | None, default: str | None) -> tuple[str | None, str]:
    """``(model, message)``: the address's model when the API serves it, else the session's run's,
    else the API's default; ``message`` says when the address named a model the API does not serve."""
    if wanted and wanted in names:
        return wanted, ""
    fallback = stored if stored in names else (default if default in names else (names[0] if names else None))
    if wanted:
        return fallback, (
            f"Model '{wanted}' is not served by this API; showing {fallback}. Models: {', '.join(names)}."
        )
    return fallback, ""


def model_dropdown(
    query: dict | None,
    stored: dict | None,
    options_of: Callable[[list[ModelPublic]], list],
    keep: Callable[[ModelPublic], bool] = lambda m: True,
) -> tuple[list, str | None, str, str]:
    """``(options, value, status text, status class)`` of a page's model dropdown: the options
    ``options_of`` makes of the API's models, the value ``pick_model`` chooses among the kept
    ones (``keep``) from the address (``query``) and the session's run (``stored``), and the page's
    API status line (a ``notice`` when the API is away or the address's model is not served)."""
    try:
        listing = client().models()
    except ApiError as exc:
        return [], None, f"API unavailable: {exc}", "notice"
    names = [m.name for m in listing.models if keep(m)]
    run = stored_run(stored)
    value, note = pick_model(names, (query or {}).get("model"), run.model if run else None, listing.default)
    return options_of(listing.models), value, note or f"API {client().base_url}", "notice" if note else "api-status"


def run_text(n_clicks, model, text, thumbnails: bool = False) -> tuple:
    """``(run-store data, error message)`` for a Run button: the run as the session's current run,
    or the API's message (``thumbnails``: made with its model-view thumbnails). Shared by every page
    that runs a text."""
    if not n_clicks:  # Dash Pages can fire a button's callback once when the page's layout is inserted
        return no_update, no_update
    if not model:
        return no_update, "Pick a model first."
    try:
        run = client().create_run(model, text or "", thumbnails=thumbnails)
    except ApiError as exc:
        return no_update, describe_error(exc, f"Running the text on {model} failed")
    return run_record(run).to_store(), ""
