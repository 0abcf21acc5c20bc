"""Callbacks of the census page: submit a job, poll its progress, show and export the result."""

from __future__ import annotations

import json

import plotly.graph_objects as go
from dash import Input, Output, State, callback, ctx, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.pages.explore_callbacks import _empty, client
from attnscope.frontend.past_jobs import register_past_jobs
from attnscope.frontend.structure_figures import census_figure

register_past_jobs("census", ("census", "probe"), job_store="census-job", poll="census-poll")


@callback(Output("census-model", "options"), Output("census-model", "value"), Input("census-kind", "value"))
def census_models(_kind):
    try:
        listing = client().models()
    except ApiError:
        return [], None
    return [{"label": m.name, "value": m.name} for m in listing.models if m.modality == "text"], listing.default


@callback(
    Output("census-job", "data"),
    Output("census-poll", "disabled"),
    Output("census-error", "children"),
    Input("census-start", "n_clicks"),
    State("census-kind", "value"),
    State("census-model", "value"),
    State("census-dataset", "value"),
    State("census-n", "value"),
    prevent_initial_call=True,
)
def start_job(_n, choice, model, dataset, n):
    kind, params = job_request(choice, model, dataset, n)
    try:
        job = client().create_job(kind, params)
    except ApiError as exc:
        return no_update, True, str(exc)
    return {"id": job.id, "kind": kind}, False, ""


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
    Input("census-poll", "n_intervals"),
    State("census-job", "data"),
    prevent_initial_call=True,
)
def poll_job(_tick, job):
    if not job:
        return 0, "", True, no_update
    try:
        status = client().job(job["id"])
    except ApiError as exc:
        return 0, str(exc), True, no_update
    text = f"{status.kind} {status.id}: {status.status} · {status.done}/{status.total or '?'}"
    if status.status == "failed":
        text += f" · {status.error}"
    finished = status.status in ("done", "failed", "cancelled")
    return status.progress, text, finished, ({**job, "done": True} if status.status == "done" else no_update)


@callback(
    Output("census-metric", "options"),
    Output("census-metric", "value"),
    Output("census-table", "data"),
    Output("census-table", "columns"),
    Input("census-job", "data"),
    prevent_initial_call=True,
)
def load_result(job):
    if not job or not job.get("done"):
        return no_update, no_update, no_update, no_update
    result = client().job_result(job["id"])
    rows = result["rows"]
    columns = [{"name": c, "id": c} for c in rows[0]] if rows else []
    metrics = list(result.get("metrics", {})) or ["accuracy"]
    return metrics, metrics[0], rows, columns


@callback(Output("census-figure", "figure"), Input("census-metric", "value"), State("census-job", "data"))
def render_result(metric, job):
    if not job or not job.get("done") or not metric:
        return _empty("Start a job; its result appears here.")
    result = client().job_result(job["id"])
    if result["kind"] == "census":
        return census_figure(result["metrics"][metric]["mean"], metric)
    rows = result["rows"]
    fig = go.Figure(
        go.Bar(
            x=[r["layer"] for r in rows],
            y=[r["accuracy"] for r in rows],
            name="accuracy",
            error_y={"type": "data", "array": [r["accuracy_std"] for r in rows]},
        )
    )
    fig.add_hline(y=result["chance"], line_dash="dot", annotation_text="chance (majority class)")
    fig.update_layout(
        title={
            "text": f"Probe ({result.get('classifier', 'logistic')}): label from each layer's "
            f"maps ({result['n']} examples, {result['folds']}-fold)",
            "font": {"size": 13},
        },
        xaxis={"title": {"text": "layer"}, "dtick": 1},
        yaxis={"title": {"text": "accuracy"}, "range": [0, 1]},
        height=380,
    )
    return fig


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
    body = client().job_result(job["id"], fmt)
    content = body if fmt == "csv" else json.dumps(body, indent=1)
    return {"content": content, "filename": f"attnscope-{job['kind']}-{job['id']}.{fmt}"}
