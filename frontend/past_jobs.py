"""Past jobs of a page's kinds, read from the API's database (``GET /jobs``): status, progress and
worker, a Show button (the result into the page), CSV/JSON downloads of finished ones, and Resume
for jobs left ``interrupted`` (the API stopped) or ``cancelled``. The list is rebuilt from the API on
every load and every few seconds, so it survives a reload of the page and a restart of the API.

A page adds ``past_jobs_panel(prefix)`` to its layout and calls ``register_past_jobs(prefix, kinds,
job_store, poll)`` once: Show and Resume write ``{"id", "kind"}`` into the page's ``job_store`` and
enable its ``poll`` interval, as the page's own Start button does.
"""

from __future__ import annotations

import hashlib
import time

from dash import ALL, Input, Output, State, callback, ctx, dcc, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client
from attnscope.server.schemas import JobPublic

REFRESH_MS = 3000


def past_jobs_panel(prefix: str) -> html.Section:
    return html.Section(
        className="panel",
        children=[
            html.H2("Past jobs", id=f"{prefix}-past-title"),
            html.P(
                "Jobs kept by the API (they survive restarts). An interrupted job (the API stopped while it ran) "
                "or a cancelled one resumes from its last saved shard.",
                className="hint",
            ),
            html.Div(id=f"{prefix}-past", **{"aria-live": "polite", "aria-labelledby": f"{prefix}-past-title"}),
            html.Div(id=f"{prefix}-past-error", className="error", role="alert"),
            dcc.Interval(id=f"{prefix}-past-poll", interval=REFRESH_MS),
            dcc.Store(id=f"{prefix}-past-seen"),
            dcc.Download(id=f"{prefix}-past-download"),
        ],
    )


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) if t else ""


def _button(prefix: str, action: str, job: JobPublic, label: str, what: str) -> html.Button:
    return html.Button(
        label,
        id={"type": f"{prefix}-past-{action}", "job": job.id, "kind": job.kind},
        n_clicks=0,
        className="small-button",
        **{"aria-label": f"{what} job {job.id}"},
    )


def _actions(prefix: str, job: JobPublic) -> list:
    buttons = []
    if job.status in ("done", "queued", "running"):
        buttons.append(_button(prefix, "show", job, "Show", "show"))
    if job.status in ("interrupted", "cancelled"):
        buttons.append(_button(prefix, "resume", job, "Resume", "resume"))
    for fmt in job.result_formats:
        buttons.append(_button(prefix, f"dl-{fmt}", job, fmt.upper(), f"download {fmt.upper()} of"))
    return buttons


HEAD = ["job", "kind", "model", "data set", "N", "status", "progress", "worker", "started (UTC)", "finished (UTC)"]


def _param(job: JobPublic, key: str) -> str:
    value = job.params.get(key)
    return "" if value is None else str(value)


def _started(job: JobPublic) -> html.Span:
    """When the job started; a job still queued shows when it was asked for, marked as such."""
    if job.started:
        return html.Span(_when(job.started))
    return html.Span(f"queued {_when(job.created)}", className="hint", title="not started yet")


def jobs_table(prefix: str, jobs: list[JobPublic]) -> html.Table | html.P:
    """The newest job first: id, kind, what it runs on (model, data set, N examples), status (with its
    message as a tooltip), progress, worker, start and finish times, its buttons."""
    if not jobs:
        return html.P("No jobs yet.", className="hint")
    rows = []
    for job in sorted(jobs, key=lambda j: j.created, reverse=True):
        note = job.error or job.message or ""
        rows.append(
            html.Tr(
                className=f"job-{job.status}",
                children=[
                    html.Td(html.Code(job.id)),
                    html.Td(job.kind),
                    html.Td(_param(job, "model"), className="job-model"),
                    html.Td(_param(job, "dataset"), className="job-dataset"),
                    html.Td(_param(job, "n"), className="job-n num"),
                    html.Td(html.Span(job.status, title=note, className="job-status")),
                    html.Td(f"{job.done}/{job.total or '?'}"),
                    html.Td(job.worker or ""),
                    html.Td(_started(job), className="job-started"),
                    html.Td(_when(job.finished)),
                    html.Td(_actions(prefix, job)),
                ],
            )
        )
    return html.Table(
        className="jobs-table",
        children=[html.Thead(html.Tr([html.Th(h, scope="col") for h in [*HEAD, "actions"]])), html.Tbody(rows)],
    )


def _digest(jobs: list[JobPublic]) -> str:
    """A fingerprint of everything the table shows, so an unchanged list is not drawn again."""
    text = "\n".join(sorted(j.model_dump_json() for j in jobs))
    return hashlib.sha256(text.encode()).hexdigest()


def _clicked() -> dict | None:
    """The pattern id of the button that fired, when it was really clicked (not just rendered)."""
    trigger = ctx.triggered_id
    if not isinstance(trigger, dict) or not any(t.get("value") for t in ctx.triggered):
        return None
    return trigger


def register_past_jobs(prefix: str, kinds: tuple[str, ...], job_store: str, poll: str) -> None:
    """The panel's callbacks (see the module docstring)."""

    @callback(
        Output(f"{prefix}-past", "children"),
        Output(f"{prefix}-past-seen", "data"),
        Input(f"{prefix}-past-poll", "n_intervals"),
        Input(job_store, "data"),
        State(f"{prefix}-past-seen", "data"),
    )
    def list_jobs(_tick, _job, seen):
        try:
            jobs = [j for kind in kinds for j in client().jobs(kind)]
        except ApiError as exc:
            return html.P(f"cannot list jobs: {exc}", className="error"), None
        # The table is drawn again only when a job changed: redrawing it every few seconds gave the
        # buttons new n_clicks, re-fired the download/resume callbacks (whose answer to a real click
        # Dash then dropped as outdated) and took the keyboard focus away from a focused button.
        digest = _digest(jobs)
        if digest == seen:
            return no_update, no_update
        return jobs_table(prefix, jobs), digest

    @callback(
        Output(job_store, "data", allow_duplicate=True),
        Output(poll, "disabled", allow_duplicate=True),
        Output(f"{prefix}-past-error", "children"),
        Input({"type": f"{prefix}-past-show", "job": ALL, "kind": ALL}, "n_clicks"),
        Input({"type": f"{prefix}-past-resume", "job": ALL, "kind": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def show_or_resume(_show, _resume):
        trigger = _clicked()
        if trigger is None:
            return no_update, no_update, no_update
        job = {"id": trigger["job"], "kind": trigger["kind"]}
        try:
            if trigger["type"].endswith("-resume"):
                client().resume_job(trigger["job"])
            elif client().job(trigger["job"]).status == "done":
                job["done"] = True  # a finished job's result is shown at once, not after a poll
        except ApiError as exc:
            return no_update, no_update, str(exc)
        return job, False, ""

    @callback(
        Output(f"{prefix}-past-download", "data"),
        Output(f"{prefix}-past-error", "children", allow_duplicate=True),
        Input({"type": f"{prefix}-past-dl-csv", "job": ALL, "kind": ALL}, "n_clicks"),
        Input({"type": f"{prefix}-past-dl-json", "job": ALL, "kind": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def download(_csv, _json):
        trigger = _clicked()
        if trigger is None:
            return no_update, no_update
        fmt = trigger["type"].rsplit("-", 1)[-1]
        try:
            api = client()
            if fmt == "csv":
                content = api.job_result_csv(trigger["job"])
            else:
                content = api.job_result(trigger["job"]).model_dump_json(indent=1, exclude_unset=True)
        except ApiError as exc:  # said on the page: a click that silently does nothing helps no one
            return no_update, f"cannot download job {trigger['job']}: {exc}"
        return {"content": content, "filename": f"attnscope-{trigger['kind']}-{trigger['job']}.{fmt}"}, ""
