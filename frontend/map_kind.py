"""The map kind of the pages that read whole runs' maps (Compare, Interventions, Vision): attention weights
or value-weighted maps (Kobayashi et al. 2020: ``||a_ij W_O v_j||``, each row normalised to sum to 1),
served by the API as a run with the same tokens and shape (``POST /runs/{id}/value-weighted``, made
once; an intervention's altered run too, from the altered forward's own values). ``shown_id`` is the
run whose maps a page draws and the note under its figure titles; a run the
API has no value-weighted maps for keeps the weights and the note names the API's reason."""

from __future__ import annotations

from attnscope.frontend.api_client import ApiClient, ApiError

VALUE_WEIGHTED_NOTE = "value-weighted maps ‖a_ij W_O v_j‖, each row normalised"


def kind_note(kind: str | None, refused: str | None = None) -> str:
    """The line under a figure title that states the map kind drawn: nothing for the weights as
    asked, the value-weighted note, or (``refused``: the API's reason) that the weights stayed."""
    if kind != "value-weighted":
        return ""
    return VALUE_WEIGHTED_NOTE if refused is None else f"attention weights (no value-weighted maps: {refused})"


def shown_id(api: ApiClient, run_id: str, kind: str | None) -> tuple[str, str]:
    """``(id, note)``: the run whose maps are drawn for ``kind`` (``run_id`` itself for the weights,
    else its value-weighted maps' run) and ``kind_note`` of what was drawn."""
    if kind != "value-weighted":
        return run_id, ""
    try:
        return api.value_weighted(run_id), kind_note(kind)
    except ApiError as exc:
        return run_id, kind_note(kind, exc.detail)


def notes(*parts: str) -> str:
    """The non-empty notes of a figure title, joined (``sink_hiding.with_note`` puts them under it)."""
    return "; ".join(p for p in parts if p)
