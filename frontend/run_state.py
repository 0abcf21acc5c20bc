"""The run a page analyses, named in its address: ``?run=ID`` (and ``model`` + ``text``, so that a
link still opens after the API restarted and forgot the run: the run is made again from them)."""

from __future__ import annotations

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.url_state import Param

RUN_PARAMS = {"run": Param(str, max_len=64), "model": Param(str, max_len=100), "text": Param(str)}
NO_RUN = "No run yet: run a text on the Explore page (or open a link with ?run=…); this page analyses that run."


def run_record(run) -> dict:
    """The session's run record (what ``run-store`` holds): ``RunPublic`` fields without the prediction."""
    return run.model_dump(exclude={"prediction"})


def resolve_run(api: ApiClient, run_id: str | None, model: str | None, text: str | None, stored: dict | None):
    """``(run record or None, message)`` for a page opened with ``run_id`` / ``model`` / ``text``
    (from its address) and ``stored`` (the session's current run).

    The address wins over the session. A run the API no longer has is made again from ``model`` and
    ``text`` when the address has them; otherwise the message says what to do."""
    if run_id:
        if stored and stored.get("id") == run_id:
            return stored, ""
        try:
            return run_record(api.run(run_id)), ""
        except ApiError as exc:
            if exc.status != 404:
                return None, f"Could not load run {run_id}: {exc.detail}"
        if model and text:
            try:
                run = api.create_run(model, text)
            except ApiError as exc:
                return None, f"Run {run_id} is gone (the API restarted?) and could not be made again: {exc.detail}"
            return run_record(
                run
            ), f"Run {run_id} is gone (the API restarted?); made again from the text in the address."
        return None, f"Run {run_id} is not known to the API (it keeps recent runs only). Run the text again on Explore."
    if model and text:
        try:
            return run_record(api.create_run(model, text)), ""
        except ApiError as exc:
            return None, f"Could not run the text of the address on {model}: {exc.detail}"
    if stored:
        return stored, ""
    return None, NO_RUN


def run_query(run: dict | None) -> dict:
    """The address values that reopen ``run``."""
    if not run:
        return {}
    return {"run": run["id"], "model": run["model"], "text": run.get("text")}
