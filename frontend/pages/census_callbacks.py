"""Callbacks of the census page: submit a job, poll its progress, show and export the result."""

from __future__ import annotations

from dash import Input, Output, State, callback, ctx, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.census_tables import census_table, probe_table
from attnscope.frontend.data_status import register_data_status
from attnscope.frontend.example_table import example_source, register_examples_table
from attnscope.frontend.job_status import status_line
from attnscope.frontend.page_common import client, describe_error
from attnscope.frontend.page_common import empty_figure as _empty
from attnscope.frontend.past_jobs import register_past_jobs
from attnscope.frontend.probe_figures import probe_figure
from attnscope.frontend.structure_figures import census_figure
from attnscope.frontend.url_state import Param, query_string, register_url_sync

KINDS = ("census", "probe", "probe-cnn")
MAX_N = 5000
MIN_N = {"census": 1, "probe": 10, "probe-cnn": 10}  # a probe cross-validates: it needs a few per fold
PARAMS = {
    "kind": Param(str, default="census", choices=KINDS),
    "model": Param(str, max_len=100),
    "dataset": Param(str, default="sst2", choices=("sst2", "movies")),
    "n": Param(int, default=100, lo=1, hi=MAX_N),
    "job": Param(str, max_len=64),
}
FINISHED = ("done", "failed", "cancelled", "interrupted")
register_url_sync("census")

register_past_jobs("census", ("census", "probe"), job_store="census-job", poll="census-poll")
register_data_status("census", "census-dataset")
register_examples_table("census")


@callback(
    Output("census-model", "options"),
    Output("census-model", "value"),
    Output("census-error", "children", allow_duplicate=True),
    Input("census-kind", "value"),
    State("census-query", "data"),
    State("census-model", "value"),
    prevent_initial_call="initial_duplicate",
)
def census_models(_kind, query, current):
    try:
        listing = client().models()
    except ApiError as exc:
        return [], None, describe_error(exc, "The model list could not be loaded")
    names = [m.name for m in listing.models if m.modality == "text"]
    wanted = current or (query or {}).get("model")
    if wanted in names:
        return names, wanted, no_update
    note = f"Model '{wanted}' is not a text model of this API; using {listing.default}." if wanted else no_update
    return names, listing.default, note


@callback(
    Output("census-job", "data", allow_duplicate=True),
    Output("census-poll", "disabled", allow_duplicate=True),
    Input("census-query", "data"),
    prevent_initial_call="initial_duplicate",
)
def reopen_job(query):
    """A link with ``job=ID`` reopens that job: a finished one shows its result at once (no poll
    first), one still running is polled."""
    job_id = (query or {}).get("job")
    if not job_id:
        return no_update, no_update
    job = {"id": job_id, "kind": (query or {}).get("kind") or "census"}
    try:
        status = client().job(job_id)
    except ApiError:
        return job, False  # the poll says what is wrong (404, the API away)
    if status.status == "done":
        return {**job, "kind": status.kind, "done": True}, False  # one poll still fills the status line
    return {**job, "kind": status.kind}, False


def check_n(choice: str, n) -> str:
    """A sentence about ``n`` when the job cannot take it ("" when it can)."""
    lo = MIN_N.get(choice, 1)
    if n is None or not isinstance(n, (int, float)) or n != int(n) or not lo <= n <= MAX_N:
        return (
            f"N must be a whole number from {lo} to {MAX_N} for a {choice} job; got {n if n is not None else 'none'}."
        )
    return ""


@callback(
    Output("census-job", "data"),
    Output("census-poll", "disabled"),
    Output("census-error", "children"),
    Input("census-start", "n_clicks"),
    State("census-kind", "value"),
    State("census-model", "value"),
    State("census-dataset", "value"),
    State("census-n", "value"),
    running=[(Output("census-start", "disabled"), True, False)],
    prevent_initial_call=True,
)
def start_job(_n, choice, model, dataset, n):
    # a bad N is this form's problem: say so, and keep polling a job that is already running
    problem = check_n(choice, n)
    if problem:
        return no_update, no_update, problem
    kind, params = job_request(choice, model, dataset, int(n))
    try:
        job = client().create_job(kind, params)
    except ApiError as exc:
        return no_update, no_update, describe_error(exc, f"The {choice} job could not start")
    return {"id": job.id, "kind": kind}, False, ""


@callback(
    Output("census-poll", "disabled", allow_duplicate=True),
    Output("census-error", "children", allow_duplicate=True),
    Input("census-cancel", "n_clicks"),
    State("census-job", "data"),
    prevent_initial_call=True,
)
def cancel_job(n_clicks, job):
    if not n_clicks or not job:
        return no_update, no_update
    try:
        client().cancel_job(job["id"])
    except ApiError as exc:
        return no_update, describe_error(exc, f"Job {job['id']} could not be cancelled")
    return False, ""  # one more poll shows it cancelled


@callback(
    Output("census-poll", "disabled", allow_duplicate=True),
    Output("census-error", "children", allow_duplicate=True),
    Input("census-retry", "n_clicks"),
    State("census-job", "data"),
    prevent_initial_call=True,
)
def retry(n_clicks, job):
    """Retry: poll the job again (after the API was away)."""
    if not n_clicks or not job:
        return no_update, ""
    return False, ""


def job_request(choice: str, model, dataset, n) -> tuple[str, dict]:
    """The page's job choice -> (API job kind, params): ``probe-cnn`` is the probe with the CNN."""
    params = {"model": model, "dataset": dataset, "n": n}
    if choice == "probe-cnn":
        return "probe", {**params, "classifier": "cnn"}
    return choice, params


@callback(
    Output("census-progress", "value"),
    Output("census-status", "children"),
    Output("census-poll", "disabled", allow_duplicate=True),
    Output("census-job", "data", allow_duplicate=True),
    Output("census-cancel", "disabled"),
    Output("census-error", "children", allow_duplicate=True),
    Input("census-poll", "n_intervals"),
    State("census-job", "data"),
    prevent_initial_call=True,
)
def poll_job(_tick, job):
    if not job:
        return 0, "", True, no_update, True, no_update
    try:
        status = client().job(job["id"])
    except ApiError as exc:
        if exc.status == 404:
            return 0, "", True, None, True, describe_error(exc, f"Job {job['id']}")
        # the API is away: stop this poll, say so; Retry (or the banner) brings it back
        return no_update, "", True, no_update, True, describe_error(exc, f"Job {job['id']} could not be polled")
    text = status_line(status)  # names a shortfall when N is beyond the data set's size
    finished = status.status in FINISHED
    record = (
        {**job, "kind": status.kind, "done": True} if status.status == "done" and not job.get("done") else no_update
    )
    return status.progress, text, finished, record, finished, no_update


@callback(
    Output("census-metric", "options"),
    Output("census-metric", "value"),
    Output("census-csv", "disabled"),
    Output("census-json", "disabled"),
    Output("census-examples-source", "data"),
    Input("census-job", "data"),
    State("census-metric", "value"),
    prevent_initial_call=True,
)
def load_result(job, current):
    """The result's metrics once the job is done (the chosen one kept when the new result has it), and
    its examples for the examples table; the Download buttons work only then (disabled before). A new
    job keeps the last result on screen until it has its own."""
    if not job:
        return [], None, True, True, None
    if not job.get("done"):
        return no_update, no_update, True, True, no_update
    try:
        result = client().job_result(job["id"])
    except ApiError:
        return [], None, True, True, None
    metrics = list(result.metrics) if result.kind == "census" else ["accuracy"]
    return metrics, current if current in metrics else metrics[0], False, False, result_examples(result)


def result_examples(result) -> dict:
    """The examples table's source of a census or probe result: its examples' ids, in order."""
    if result.kind == "census":
        ids = result.example_ids or (result.per_example.id if result.per_example else [])
    else:
        ids = result.per_example.id if result.per_example else []
    return example_source(result.model, result.dataset, ids, getattr(result, "split", None))


@callback(
    Output("census-url", "data"),
    Input("census-kind", "value"),
    Input("census-model", "value"),
    Input("census-dataset", "value"),
    Input("census-n", "value"),
    Input("census-job", "data"),
    prevent_initial_call=True,
)
def to_address(kind, model, dataset, n, job):
    choice = kind
    if job and job.get("kind") == "probe" and kind == "probe-cnn":
        choice = "probe-cnn"
    values = {"kind": choice, "model": model, "dataset": dataset, "n": n if isinstance(n, int) else None}
    values["job"] = (job or {}).get("id")
    return query_string(values, PARAMS)


@callback(
    Output("census-figure", "figure"),
    Output("census-table", "data"),
    Output("census-table", "columns"),
    Input("census-metric", "value"),
    Input("census-job", "data"),
)
def render_result(metric, job):
    """The chosen metric's figure and table (census: per head with its t interval and n; probe: per layer
    with its Wilson interval, n and the verdict against chance)."""
    if job and not job.get("done") and ctx.triggered_id == "census-job":
        return no_update, no_update, no_update  # a job just started: the last result stays until it has its own
    if not job or not job.get("done") or not metric:
        return _empty("Start a job; its result appears here."), [], []
    try:
        result = client().job_result(job["id"])
    except ApiError as exc:
        return _empty(describe_error(exc, f"The result of job {job['id']} could not be loaded")), [], []
    rows = [r.model_dump(exclude_unset=True) for r in result.rows]
    if result.kind == "census":
        if metric not in result.metrics:  # the metric of the last result: load_result picks this one's
            return no_update, no_update, no_update
        columns, data = census_table(rows, metric)
        return census_figure(result.metrics[metric].mean, metric), data, columns
    columns, data = probe_table(rows, result.n, result.chance)
    return probe_figure(result), data, columns


@callback(
    Output("census-download", "data"),
    Input("census-csv", "n_clicks"),
    Input("census-json", "n_clicks"),
    State("census-job", "data"),
    prevent_initial_call=True,
)
def download(_csv, _json, job):
    if not job or not job.get("done"):
        return no_update
    fmt = "csv" if ctx.triggered_id == "census-csv" else "json"
    try:
        api = client()
        content = (
            api.job_result_csv(job["id"])
            if fmt == "csv"
            else api.job_result(job["id"]).model_dump_json(indent=1, exclude_unset=True)
        )
    except ApiError:
        return no_update
    return {"content": content, "filename": f"attnscope-{job['kind']}-{job['id']}.{fmt}"}
