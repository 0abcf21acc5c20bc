"""The workspace's table of runs, built from the API's ``RunSummaryPublic`` (pure: summaries in,
Dash components and links out), and the links that open a run in Explore / Vision or two in Compare."""

from __future__ import annotations

import time

from dash import dcc, html

from attnscope.frontend.run_state import RUN_PARAMS
from attnscope.frontend.url_state import MAX_TEXT_IN_URL, Param, query_string
from attnscope.server.schemas import MAX_RUN_NAME, RunSummaryPublic

COMPARE_PARAMS = {
    k: Param(str, max_len=MAX_TEXT_IN_URL if k.startswith("text") else 100)
    for k in ("model_a", "text_a", "a", "model_b", "text_b", "b")
}
PREVIEW_CHARS = 80  # characters of a run's text shown in its row


def created_label(seconds: float) -> str:
    """``2026-12-02 18:33 UTC``: the run's creation time, the same for every viewer."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def open_href(run: RunSummaryPublic) -> str:
    """Where the run opens: Explore for a text run (run id, model and, when it fits, the text), Vision
    for an image run."""
    if run.source_kind == "text":
        text = None if run.text_truncated else run.text
        return "/" + query_string({"run": run.id, "model": run.model, "text": text}, RUN_PARAMS)
    return "/vision" + query_string({"run": run.id, "model": run.model}, {"run": Param(), "model": Param()})


def compare_href(a: RunSummaryPublic, b: RunSummaryPublic) -> tuple[str | None, str]:
    """``(link, why not)``: the Compare page on runs ``a`` and ``b``, or None and the reason (Compare
    takes two text runs whose texts fit in its address)."""
    if a.source_kind != "text" or b.source_kind != "text":
        return None, "Compare takes two text runs; pick two runs of a text model."
    if any(r.text_truncated or len(r.text) > MAX_TEXT_IN_URL for r in (a, b)):
        return None, f"Compare takes texts of at most {MAX_TEXT_IN_URL:,} characters in its address."
    values = {"model_a": a.model, "text_a": a.text, "a": a.id, "model_b": b.model, "text_b": b.text, "b": b.id}
    return "/compare" + query_string(values, COMPARE_PARAMS), ""


def describe(run: RunSummaryPublic) -> str:
    """What the run's input was, in a few words."""
    if run.source_kind == "sample":
        return f"{run.dataset} sample {run.index}"
    if run.source_kind == "upload":
        return "uploaded image"
    text = run.text.replace("\n", " ")
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _id(kind: str, run_id: str) -> dict:
    return {"type": kind, "run": run_id}


def run_row(run: RunSummaryPublic, selected: bool) -> html.Tr:
    label = run.name or run.id
    return html.Tr(
        className="pinned" if run.pinned else "",
        **{"data-run": run.id},
        children=[
            html.Td(
                dcc.Checklist(
                    id=_id("ws-select", run.id),
                    options=[{"label": html.Span(f"select {label} for Compare", className="sr-only"), "value": run.id}],
                    value=[run.id] if selected else [],
                    className="ws-select",
                ),
                title=f"tick {label} to compare it",  # names the checklist (assets/attnscope.js nameControls)
            ),
            html.Td(
                html.Div(
                    className="ws-name",
                    children=[
                        html.Label(
                            [
                                html.Span(f"name of run {run.id}", className="sr-only"),
                                dcc.Input(
                                    id=_id("ws-name", run.id),
                                    value=run.name or "",
                                    placeholder="name this run",
                                    maxLength=MAX_RUN_NAME,
                                    debounce=False,
                                ),
                            ]
                        ),
                        html.Button(
                            "Rename",
                            id=_id("ws-rename", run.id),
                            n_clicks=0,
                            className="small-button",
                            **{"aria-label": f"Rename {run.id}"},
                        ),
                    ],
                )
            ),
            html.Td(html.Span(describe(run), title=run.text[:500] or None), className="ws-input"),
            html.Td(run.model),
            html.Td("—" if run.n_tokens is None else f"{run.n_tokens:,}", className="num"),
            html.Td(created_label(run.created)),
            html.Td(
                html.Button(
                    "Pinned" if run.pinned else "Pin",
                    id=_id("ws-pin", run.id),
                    n_clicks=0,
                    className="small-button ws-pin" + (" on" if run.pinned else ""),
                    **{
                        "aria-pressed": "true" if run.pinned else "false",
                        "aria-label": f"{'Pinned' if run.pinned else 'Pin'} {label}",  # the visible text first
                    },
                )
            ),
            html.Td(
                [
                    dcc.Link("Open", href=open_href(run), className="ws-open"),
                    html.Button(
                        "Delete",
                        id=_id("ws-delete", run.id),
                        n_clicks=0,
                        className="small-button ws-delete",
                        **{"aria-label": f"Delete {label}"},
                    ),
                ]
            ),
        ],
    )


HEADERS = ("Compare", "Name", "Input", "Model", "Tokens", "Created", "Pinned", "Actions")


def runs_table(runs: list[RunSummaryPublic], selected: set[str]) -> html.Table:
    """The page of runs as a table, one row per run (``run_row``)."""
    return html.Table(
        className="workspace-table",
        children=[
            html.Thead(html.Tr([html.Th(h, scope="col") for h in HEADERS])),
            html.Tbody([run_row(r, r.id in selected) for r in runs]),
        ],
    )
