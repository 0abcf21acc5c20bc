"""The Interventions page's data-set panel: the per-head ablation grid of the run's model over N examples
of a data set (a ``head-effects`` job), shown as a table of heads with each mean effect's 95 % interval,
``n`` and p corrected across every head (Holm, Benjamini-Hochberg), and how many heads stand out.

The grid above is one example (no interval can be drawn from it); this panel is where the page compares
heads with their uncertainty. Errors are red beside the panel; the last table stays until a new one."""

from __future__ import annotations

from dash import Input, Output, State, callback, dash_table, dcc, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.example_table import example_source, examples_block, register_examples_table
from attnscope.frontend.intervention_tables import effects_table, standouts_line
from attnscope.frontend.page_common import client, describe_error, panel
from attnscope.frontend.run_state import NO_RUN

FINISHED = ("done", "failed", "cancelled", "interrupted")
MAX_N = 1000  # HeadEffectsParams.n
register_examples_table("interventions-ds")


def dataset_panel() -> html.Section:
    """The panel's layout (ids ``interventions-ds-*``)."""
    return panel(
        "Per-head effects over a data set",
        "Every head of this run's model ablated in turn (the chosen ablation) on N examples of a data set, the "
        "task's default metric: each head's mean effect with its 95 % t interval over the examples and n, its "
        "p (mean effect 0) and that p adjusted across all heads. A head stands out only when its adjusted p is "
        "below 0.05 (docs/methods/statistics.md).",
        html.Div(
            className="inline",
            children=[
                html.Label("data set", htmlFor="interventions-ds-dataset"),
                dcc.Dropdown(
                    id="interventions-ds-dataset",
                    options=[{"label": "SST-2 dev", "value": "sst2"}, {"label": "movie reviews", "value": "movies"}],
                    value="sst2",
                    clearable=False,
                    className="small-dropdown",
                ),
                html.Label("N", htmlFor="interventions-ds-n"),
                dcc.Input(id="interventions-ds-n", type="number", min=2, max=MAX_N, step=1, value=20),
                html.Button("Run over the data set", id="interventions-ds-start", n_clicks=0, className="small-button"),
            ],
        ),
        html.Div(id="interventions-ds-status", className="hint", role="status"),
        html.Div(id="interventions-ds-error", className="error", role="alert"),
        html.Div(id="interventions-ds-summary", className="result-line", role="status"),
        dash_table.DataTable(
            id="interventions-ds-table",
            page_size=12,
            sort_action="native",
            style_table={"overflowX": "auto"},
            style_cell={"fontSize": 12, "padding": "3px"},
        ),
        dcc.Store(id="interventions-ds-job"),
        dcc.Interval(id="interventions-ds-poll", interval=1000, disabled=True),
        *examples_block("interventions-ds"),
    )


@callback(
    Output("interventions-ds-job", "data"),
    Output("interventions-ds-poll", "disabled"),
    Output("interventions-ds-error", "children"),
    Input("interventions-ds-start", "n_clicks"),
    State("interventions-run-data", "data"),
    State("interventions-ds-dataset", "value"),
    State("interventions-ds-n", "value"),
    State("interventions-method", "value"),
    prevent_initial_call=True,
)
def start_job(_clicks, run, dataset, n, method):
    if not run:
        return no_update, no_update, NO_RUN
    if not isinstance(n, (int, float)) or n != int(n) or not 2 <= n <= MAX_N:
        return no_update, no_update, f"N must be a whole number from 2 to {MAX_N} (an interval needs two examples)."
    params = {"model": run["model"], "dataset": dataset or "sst2", "n": int(n), "method": method or "zero"}
    try:
        job = client().create_job("head-effects", params)
    except ApiError as exc:
        return no_update, no_update, describe_error(exc, "The head-effects job could not start")
    return {"id": job.id}, False, ""


@callback(
    Output("interventions-ds-status", "children"),
    Output("interventions-ds-poll", "disabled", allow_duplicate=True),
    Output("interventions-ds-job", "data", allow_duplicate=True),
    Output("interventions-ds-error", "children", allow_duplicate=True),
    Input("interventions-ds-poll", "n_intervals"),
    State("interventions-ds-job", "data"),
    prevent_initial_call=True,
)
def poll_job(_tick, job):
    if not job:
        return "", True, no_update, no_update
    try:
        status = client().job(job["id"])
    except ApiError as exc:
        return "", True, no_update, describe_error(exc, f"Job {job['id']} could not be polled")
    text = f"head-effects {status.id}: {status.status} · {status.done}/{status.total or '?'}"
    if status.error:
        text += f" · {status.error}"
    done = status.status == "done" and not job.get("done")
    return text, status.status in FINISHED, ({**job, "done": True} if done else no_update), no_update


@callback(
    Output("interventions-ds-table", "data"),
    Output("interventions-ds-table", "columns"),
    Output("interventions-ds-summary", "children"),
    Output("interventions-ds-error", "children", allow_duplicate=True),
    Output("interventions-ds-examples-source", "data"),
    Input("interventions-ds-job", "data"),
    prevent_initial_call=True,
)
def show_result(job):
    """The finished job's heads, largest mean |effect| first, and its examples (each with the rank
    agreement of its |effect| grid with its heads' importance); a job still running keeps the last table."""
    if not job or not job.get("done"):
        return (no_update,) * 5
    try:
        result = client().job_result(job["id"]).model_dump(exclude_unset=True)
    except ApiError as exc:
        failed = describe_error(exc, f"The result of job {job['id']} could not load")
        return no_update, no_update, no_update, failed, no_update
    alpha = (result.get("standouts") or {}).get("alpha", 0.05)
    columns, data = effects_table(result["rows"], alpha)
    examples = example_source(
        result["model"],
        result["dataset"],
        [e["id"] for e in result["examples"]],
        values=[e.get("rank_rho") for e in result["examples"]],
        value_name="rank rho (|effect| vs importance)",
    )
    return data, columns, standouts_line(result), "", examples
