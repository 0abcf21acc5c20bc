"""Beside a data-set job's Start button: whether the chosen data set is in the API's data folder, and the
command that fetches it when it is not (``GET /datasets``), shown before any job is started."""

from __future__ import annotations

from dash import Input, Output, callback, html

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client
from attnscope.server.schemas import DataSetList


def status_text(listing: DataSetList, key: str | None) -> tuple[str, bool]:
    """``(text, present)`` for data set ``key`` (``sst2``, ``movies``, ...) in ``listing``."""
    item = next((d for d in listing.items if d.key == key), None)
    if item is None:
        return "", True
    if not item.present:
        missing = f"{item.key} is not in the API's data folder: run `{item.fetch}` (or make data) where the API runs"
        return missing, False
    if not item.complete:
        return f"{item.key}: a small cut (the test fixtures); `{item.fetch}` gets the whole set", True
    return f"{item.key}: in the data folder ({item.bytes / 1e6:.1f} MB)", True


def data_status(page: str) -> html.Span:
    """The status line (``{page}-data-status``); ``register_data_status`` fills it."""
    return html.Span(id=f"{page}-data-status", className="hint data-status", role="status")


def register_data_status(page: str, dataset_input: str) -> None:
    """Refresh ``{page}-data-status`` whenever the data-set dropdown ``dataset_input`` changes (and on load)."""

    @callback(
        Output(f"{page}-data-status", "children"),
        Output(f"{page}-data-status", "className"),
        Input(dataset_input, "value"),
    )
    def _show(key):
        try:
            listing = client().datasets()
        except ApiError:
            return "", "hint data-status"  # the banner already says the API is not answering
        text, present = status_text(listing, key)
        return text, "hint data-status" if present else "hint data-status data-missing"
