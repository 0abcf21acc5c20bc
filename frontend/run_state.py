"""The run a page analyses, named in its address: ``?run=ID`` (and ``model`` + ``text``, so that a
link still opens after the API restarted and forgot the run: the run is made again from them; or
``model`` + ``example=DATASET:KEY``, a data-set example whose text is too long for an address, read
from the API's data folder: what a data-set result's examples table links to)."""

from __future__ import annotations

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.run_record import RunRecord, load_run
from attnscope.frontend.url_state import Param

RUN_PARAMS = {
    "run": Param(str, max_len=64),
    "model": Param(str, max_len=100),
    "text": Param(str),
    "example": Param(str, max_len=250),  # DATASET:KEY (an example id or index), in place of a long text
}
NO_RUN = "No run yet: run a text on the Explore page (or open a link with ?run=…); this page analyses that run."


def run_record(run) -> RunRecord:
    """The session's run record (what ``run-store`` holds, as ``to_store()``) of the API's ``RunPublic``."""
    return RunRecord.from_run(run)


def example_text(api: ApiClient, example: str) -> str:
    """The text of ``DATASET:KEY`` (``ApiError`` when the API has none; a link to a HateXplain example is
    made only from a result that opted in, so it carries the opt-in)."""
    dataset, _, key = example.partition(":")
    if not key:
        raise ApiError(422, f"example={example!r}: write it as DATASET:KEY, e.g. sst2:sst2-dev-12")
    return api.dataset_example(dataset, key, allow_offensive=dataset == "hatexplain").text


def resolve_record(
    api: ApiClient,
    run_id: str | None,
    model: str | None,
    text: str | None,
    stored,
    thumbnails: bool = False,
    example: str | None = None,
) -> tuple[RunRecord | None, str]:
    """``(run record or None, message)`` for a page opened with ``run_id`` / ``model`` / ``text``
    (from its address) and ``stored`` (the session's current run, as its store holds it).

    The address wins over the session. A run the API no longer has is made again from ``model`` and
    ``text`` when the address has them; otherwise the message says what to do. A stored run this
    dashboard cannot read counts as none (the message says so when nothing else is shown). A run
    made here comes with its model-view thumbnails when ``thumbnails`` (Explore shows them).
    ``example`` (``DATASET:KEY``) stands for ``text`` when the address has none."""
    kept, stale = load_run(stored)
    if example and not text and not run_id and model:
        try:
            text = example_text(api, example)
        except ApiError as exc:
            return None, f"Could not read example {example}: {exc.detail}"
    if run_id:
        if kept and kept.id == run_id:
            return kept, ""
        try:
            return run_record(api.run(run_id, summary=True)), ""  # the record keeps no per-position lists
        except ApiError as exc:
            if exc.status != 404:
                return None, f"Could not load run {run_id}: {exc.detail}"
        if model and text:
            try:
                run = api.create_run(model, text, thumbnails=thumbnails)
            except ApiError as exc:
                return None, f"Run {run_id} is gone (the API restarted?) and could not be made again: {exc.detail}"
            remade = f"Run {run_id} is gone (the API restarted?); made again from the text in the address."
            return run_record(run), remade
        return None, f"Run {run_id} is not known to the API (it keeps recent runs only). Run the text again on Explore."
    if model and text:
        try:
            return run_record(api.create_run(model, text, thumbnails=thumbnails)), ""
        except ApiError as exc:
            return None, f"Could not run the text of the address on {model}: {exc.detail}"
    if kept:
        return kept, ""
    return None, stale or NO_RUN


def resolve_run(api: ApiClient, run_id: str | None, model: str | None, text: str | None, stored):
    """``resolve_record`` with the record as its store dict (``to_store()``), for a page that still
    reads its run by key (Interventions)."""
    run, message = resolve_record(api, run_id, model, text, stored)
    return (run.to_store() if run else None), message


def is_new(run: RunRecord, stored) -> bool:
    """Whether ``run`` is another run than the one ``stored`` holds (then it becomes the session's)."""
    kept, _ = load_run(stored)
    return kept is None or kept.id != run.id


def run_query(run: RunRecord | dict | None) -> dict:
    """The address values that reopen ``run`` (a record, or its store dict)."""
    if not isinstance(run, RunRecord):
        run = load_run(run)[0]
    if not run:
        return {}
    return {"run": run.id, "model": run.model, "text": run.text or None}
