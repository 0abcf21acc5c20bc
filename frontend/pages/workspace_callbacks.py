"""Callbacks of the workspace page: the page of runs (``GET /runs``), renaming and pinning
(``PATCH /runs/{id}``), deleting after a confirmation (``DELETE /runs/{id}``) and the Compare link of
two ticked runs; all over HTTP (``ApiClient``)."""

from __future__ import annotations

from dash import ALL, Input, Output, State, callback, ctx, no_update
from pydantic import ValidationError

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client, describe_error
from attnscope.frontend.url_state import Param, query_string, register_url_sync
from attnscope.frontend.workspace_table import compare_href, runs_table
from attnscope.server.schemas import MAX_LIST_QUERY, RunSummaryList, RunSummaryPublic

PAGE = 50  # runs per page
PARAMS = {
    "q": Param(str, max_len=MAX_LIST_QUERY),
    "pinned": Param(bool, default=False),
    "offset": Param(int, default=0, lo=0, hi=1_000_000),
}
register_url_sync("workspace")


def _listing(data) -> RunSummaryList | None:
    try:
        return RunSummaryList.model_validate(data) if data else None
    except ValidationError:
        return None


def _run(data, run_id: str) -> RunSummaryPublic | None:
    listing = _listing(data)
    return next((r for r in listing.items if r.id == run_id), None) if listing else None


def _ticked(values) -> list[str]:
    return [v for vs in values or [] for v in (vs or [])]


@callback(
    Output("workspace-items", "data"),
    Output("workspace-table", "children"),
    Output("workspace-count", "children"),
    Output("workspace-prev", "disabled"),
    Output("workspace-next", "disabled"),
    Output("workspace-error", "children"),
    Output("workspace-url", "data"),
    Input("workspace-query", "data"),
    Input("workspace-q", "value"),
    Input("workspace-pinned", "value"),
    Input("workspace-refresh", "data"),
    Input("workspace-reload", "n_clicks"),
    Input("workspace-prev", "n_clicks"),
    Input("workspace-next", "n_clicks"),
    Input("workspace-retry", "n_clicks"),
    State("workspace-items", "data"),
    State({"type": "ws-select", "run": ALL}, "value"),
)
def load_runs(query, q, pinned, _refresh, _reload, _prev, _next, _retry, shown, ticked):
    """The page of runs for the filters; Previous / Next move by ``PAGE``, a new filter starts at 0."""
    current = _listing(shown)
    trigger = ctx.triggered_id
    if trigger == "workspace-query" or current is None:
        offset = int((query or {}).get("offset") or 0)
    elif trigger in ("workspace-q", "workspace-pinned"):
        offset = 0
    else:
        offset = current.offset + {"workspace-prev": -PAGE, "workspace-next": PAGE}.get(trigger, 0)
    offset = max(0, offset)
    q = (q or "").strip()[:MAX_LIST_QUERY] or None
    only_pinned = "pinned" in (pinned or [])
    try:
        listing = client().list_runs(offset, PAGE, q=q, pinned=True if only_pinned else None)
    except ApiError as exc:
        return no_update, no_update, "", True, True, describe_error(exc, "The runs could not be listed"), no_update
    if not listing.items and listing.total and offset:  # the page emptied (deletes): back to the last one
        offset = max(0, (listing.total - 1) // PAGE * PAGE)
        listing = client().list_runs(offset, PAGE, q=q, pinned=True if only_pinned else None)
    if listing.total:
        count = f"Runs {offset + 1:,}–{offset + len(listing.items):,} of {listing.total:,}"
        table = runs_table(listing.items, set(_ticked(ticked)))
    else:
        count = "No runs match." if q or only_pinned else "No runs yet: run a text on Explore and it is listed here."
        table = []
    address = query_string({"q": q, "pinned": only_pinned, "offset": offset}, PARAMS)
    more = offset + len(listing.items) < listing.total
    return listing.model_dump(mode="json"), table, count, offset == 0, not more, "", address


@callback(
    Output("workspace-refresh", "data"),
    Output("workspace-message", "children"),
    Output("workspace-pending", "data"),
    Input({"type": "ws-pin", "run": ALL}, "n_clicks"),
    Input({"type": "ws-rename", "run": ALL}, "n_clicks"),
    Input({"type": "ws-name", "run": ALL}, "n_submit"),
    Input({"type": "ws-delete", "run": ALL}, "n_clicks"),
    Input("workspace-confirm-yes", "n_clicks"),
    Input("workspace-confirm-no", "n_clicks"),
    State({"type": "ws-name", "run": ALL}, "value"),
    State("workspace-items", "data"),
    State("workspace-pending", "data"),
    State("workspace-refresh", "data"),
    prevent_initial_call=True,
)
def act(_pins, _renames, _submits, _deletes, _yes, _no, names, shown, pending, refresh):
    """Pin / unpin, rename (button or Enter), ask to delete, and delete once confirmed."""
    if not ctx.triggered or not ctx.triggered[0]["value"]:
        return no_update, no_update, no_update  # buttons that just appeared (a new page of runs)
    trigger = ctx.triggered_id
    bumped = (refresh or 0) + 1
    if trigger == "workspace-confirm-no":
        return no_update, "Nothing deleted.", None
    try:
        if trigger == "workspace-confirm-yes":
            if not pending:
                return no_update, no_update, None
            client().delete_run(pending["id"])
            return bumped, f"Deleted run {pending['label']}.", None
        run = _run(shown, trigger["run"])
        if run is None:
            return bumped, "That run is no longer listed; the list was refreshed.", None
        label = run.name or run.id
        if trigger["type"] == "ws-pin":
            done = client().update_run(run.id, pinned=not run.pinned)
            return bumped, f"{'Pinned' if done.pinned else 'Unpinned'} {label}.", no_update
        if trigger["type"] in ("ws-rename", "ws-name"):
            ids = [i["id"]["run"] for i in ctx.states_list[0]]
            name = (names[ids.index(run.id)] if run.id in ids else "") or ""
            done = client().update_run(run.id, name=name.strip())
            said = f"Renamed {run.id} to “{done.name}”." if done.name else f"Removed the name of {run.id}."
            return bumped, said, None
        return no_update, "", {"id": run.id, "label": label, "model": run.model, "n_tokens": run.n_tokens}
    except ApiError as exc:
        return bumped, describe_error(exc, "The run could not be changed"), None


@callback(
    Output("workspace-confirm", "className"),
    Output("workspace-confirm-text", "children"),
    Input("workspace-pending", "data"),
)
def show_confirm(pending):
    if not pending:
        return "notice empty", ""
    tokens = "" if pending.get("n_tokens") is None else f", {pending['n_tokens']:,} tokens"
    return "notice", (
        f"Delete run {pending['label']} ({pending['model']}{tokens})? Its record and maps are removed from the "
        "server, and links to it stop working. This cannot be undone."
    )


@callback(
    Output("workspace-compare", "href"),
    Output("workspace-compare", "className"),
    Output("workspace-compare-hint", "children"),
    Input({"type": "ws-select", "run": ALL}, "value"),
    State("workspace-items", "data"),
)
def compare_link(values, shown):
    """The Compare link once exactly two runs are ticked (and Compare can take them)."""
    ticked = _ticked(values)
    if len(ticked) != 2:
        hint = "Tick two runs to compare them." if len(ticked) < 2 else "Tick only two runs to compare them."
        return "", "hidden", hint
    a, b = (_run(shown, i) for i in ticked)
    if a is None or b is None:
        return "", "hidden", "Tick two runs of this page to compare them."
    href, why = compare_href(a, b)
    return (href, "run-button", f"A: {a.name or a.id}, B: {b.name or b.id}") if href else ("", "hidden", why)
