"""Callbacks of the faithfulness page; all data comes from the API over HTTP (``ApiClient``)."""

from __future__ import annotations

from dash import Input, Output, State, callback, ctx, dcc, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.data_status import register_data_status
from attnscope.frontend.example_table import example_source, register_examples_table
from attnscope.frontend.faithfulness_figures import curves_figure, metric_table, parse_marked_text, token_colors
from attnscope.frontend.job_status import n_shortfall
from attnscope.frontend.page_common import client, describe_error, empty_figure
from attnscope.frontend.past_jobs import register_past_jobs
from attnscope.frontend.url_state import Param, query_string, register_url_sync
from attnscope.server.schemas import FaithfulnessPublic
from attnscope.server.schemas.faithfulness import DEFAULT_EXPLAINERS, DEFAULT_METRICS

EXAMPLE = "a [[gripping]] , [[funny]] and [[deeply moving]] film , though the ending drags ."
PARAMS = {
    "model": Param(str, max_len=100),
    "text": Param(str),
    "convention": Param(str, default="eraser", choices=("eraser", "eraser-paper", "ferret")),
    "k": Param(float, default=0.2, lo=0.01, hi=1),
    "explainers": Param(str, max_len=400),
    "dataset": Param(str, default="sst2", choices=("sst2", "movies", "hatexplain")),
    "n": Param(int, default=10, lo=1, hi=2000),
    "job": Param(str, max_len=64),
}
register_url_sync("faith")


def explainer_list(value: str | None) -> list[str]:
    """``"attention,random"`` -> ``["attention", "random"]`` (blank -> ``[]``)."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]


register_past_jobs("faith", ("faithfulness",), job_store="faith-job", poll="faith-poll")
register_data_status("faith", "faith-dataset")
register_examples_table("faith")


@callback(
    Output("faith-model", "options"),
    Output("faith-model", "value"),
    Output("faith-explainers", "options"),
    Output("faith-explainers", "value"),
    Output("faith-notes", "children"),
    Output("faith-notes", "className"),
    Input("faith-query", "data"),
    State("faith-explainers", "value"),
)
def load_choices(query, chosen):
    query = query or {}
    try:
        listing = client().models()
        explainers = client().explainers()
    except ApiError as exc:
        note = describe_error(exc, "The classifiers could not be loaded")
        return [], None, no_update, no_update, note, "notice"
    classifiers = [m for m in listing.models if m.task == "classification" and m.modality == "text"]
    options = [
        {"label": f"{m.name}" + (f" · acc {m.accuracy:.3f}" if m.accuracy else ""), "value": m.name}
        for m in classifiers
    ]
    value = (
        "minilm-sst2"
        if any(m.name == "minilm-sst2" for m in classifiers)
        else (options[0]["value"] if options else None)
    )
    notes = []
    wanted = query.get("model")
    if wanted and any(m.name == wanted for m in classifiers):
        value = wanted
    elif wanted:
        notes.append(f"Model '{wanted}' is not a text classifier of this API; using {value}.")
    known = {e.name for e in explainers}
    unknown = [e for e in chosen or [] if e not in known]
    if unknown:
        notes.append(f"Unknown explainer(s) {', '.join(unknown)} left out; explainers: {', '.join(sorted(known))}.")
    kept = [e for e in chosen or [] if e in known] or [e for e in DEFAULT_EXPLAINERS if e in known]
    opts = [{"label": e.name, "value": e.name, "title": e.description} for e in explainers]
    return options, value, opts, kept, " ".join(notes), "notice" if notes else "notice empty"


@callback(
    Output("faith-result", "data"),
    Output("faith-error", "children"),
    Input("faith-run", "n_clicks"),
    Input("faith-model", "value"),
    State("faith-query", "data"),
    State("faith-text", "value"),
    State("faith-explainers", "value"),
    State("faith-convention", "value"),
    State("faith-k", "value"),
    State("faith-attn-layer", "value"),
    State("faith-attn-heads", "value"),
    State("faith-attn-row", "value"),
    running=[
        (Output("faith-run", "disabled"), True, False),
        (Output("faith-run", "children"), "Explaining…", "Explain"),
    ],
    prevent_initial_call=True,
)
def explain(_n, model, query, marked, explainers, convention, k, layer, heads, row):
    # Explain pressed, or the page opened from a link with a text (once its classifier is known)
    if ctx.triggered_id == "faith-model" and (_n or not (query or {}).get("text")):
        return no_update, no_update
    if not model:
        return no_update, "Pick a classifier first."
    if not explainers:
        return no_update, "Choose at least one explainer."
    try:
        options = attention_options(layer, heads, row)
    except ValueError as exc:
        return no_update, str(exc)
    text, spans = parse_marked_text(marked or "")
    try:
        run = client().create_run(model, text)
        body = {
            "explainers": explainers,
            "convention": convention,
            "k": k or 0.2,
            "metrics": list(DEFAULT_METRICS),
            "options": options,
        }
        if spans:
            body["human_spans"] = spans
        result = client().faithfulness(run.id, body)
    except ApiError as exc:
        return no_update, describe_error(exc, f"Explaining the text with {model} failed")
    return result.model_dump(), ""


def attention_options(layer, heads: str | None, row: str | None) -> dict:
    """The raw-attention explainer's options from the page's controls: ``{"attention": {...}}``.

    ``heads``: blank or "all" for every head, else comma-separated head numbers ("0, 3,7")."""
    opts: dict = {"layer": -1 if layer in (None, "") else int(layer), "row": row or "cls"}
    text = (heads or "").strip().lower()
    if text and text != "all":
        try:
            opts["heads"] = sorted({int(v) for v in text.replace(" ", "").split(",") if v != ""})
        except ValueError:
            raise ValueError(
                f"heads must be blank (all) or comma-separated head numbers such as 0,3,7; got {heads!r}"
            ) from None
    return {"attention": opts}


def _highlight_row(name: str, tokens, scores, special, human, rationale) -> html.Div:
    colors = token_colors(scores, special)
    chips = []
    for i, (tok, color) in enumerate(zip(tokens, colors)):
        cls = "tok" + (" human" if human and human[i] else "") + (" hard" if i in rationale else "")
        chips.append(html.Span(tok, className=cls, style={"background": color}, title=f"{tok}: {scores[i]:.4g}"))
    return html.Div(className="faith-row", children=[html.Span(name, className="faith-name"), html.Div(chips)])


@callback(
    Output("faith-highlights", "children"),
    Output("faith-curves", "figure"),
    Output("faith-table", "columns"),
    Output("faith-table", "data"),
    Output("faith-summary", "children"),
    Input("faith-result", "data"),
)
def render_example(result):
    if not result:
        return [], empty_figure("Explain a text to see the curves.", height=300), [], [], ""
    result = FaithfulnessPublic.model_validate(result)  # the store holds the API's answer as JSON
    tokens, special, human = result.tokens, result.special, result.human_rationale
    rows = [_highlight_row(e.name, tokens, e.scores, special, human, set(e.rationale or [])) for e in result.explainers]
    fig = curves_figure(
        result.bins,
        {e.name: e.comp_curve or [] for e in result.explainers},
        {e.name: e.suff_curve or [] for e in result.explainers},
        title=f"{result.convention} convention, {result.removal}",
    )
    shown = [m for m in result.metrics if human or m not in ("token_f1", "iou_f1", "auprc")]
    columns, data = metric_table([e.model_dump() for e in result.explainers], shown)
    label = result.labels[result.target]
    summary = f"explaining '{label}' (p = {result.probs[result.target]:.3f}); k = {result.k}; {len(tokens)} tokens" + (
        "" if human else "; mark words with [[...]] for plausibility"
    )
    return rows, fig, columns, data, summary


@callback(
    Output("faith-job", "data"),
    Output("faith-poll", "disabled"),
    Output("faith-job-error", "children"),
    Input("faith-job-start", "n_clicks"),
    State("faith-model", "value"),
    State("faith-dataset", "value"),
    State("faith-n", "value"),
    State("faith-explainers", "value"),
    State("faith-convention", "value"),
    State("faith-attn-layer", "value"),
    State("faith-attn-heads", "value"),
    State("faith-attn-row", "value"),
    State("faith-allow-offensive", "value"),
    running=[(Output("faith-job-start", "disabled"), True, False)],
    prevent_initial_call=True,
)
def start_job(_n, model, dataset, n, explainers, convention, layer, heads, row, allow_offensive):
    try:
        options = attention_options(layer, heads, row)
    except ValueError as exc:
        return no_update, True, str(exc)
    params = {
        "model": model or "minilm-sst2",
        "dataset": dataset,
        "n": n or 10,
        "explainers": [e for e in explainers or [] if e != "flow"] or ["random"],
        "convention": convention,
        "options": options,
        "allow_offensive": "yes" in (allow_offensive or []),
    }
    try:
        job = client().create_job("faithfulness", params)
    except ApiError as exc:
        return no_update, no_update, describe_error(exc, "The data-set job could not start")
    return job.model_dump(), False, ""


@callback(
    Output("faith-job", "data", allow_duplicate=True),
    Output("faith-poll", "disabled", allow_duplicate=True),
    Input("faith-query", "data"),
    prevent_initial_call="initial_duplicate",
)
def reopen_job(query):
    """A link with ``job=ID`` reopens that data-set job (progress, then its table)."""
    job_id = (query or {}).get("job")
    return ({"id": job_id}, False) if job_id else (no_update, no_update)


@callback(
    Output("faith-url", "data"),
    Input("faith-result", "data"),
    Input("faith-model", "value"),
    Input("faith-convention", "value"),
    Input("faith-k", "value"),
    Input("faith-explainers", "value"),
    Input("faith-dataset", "value"),
    Input("faith-n", "value"),
    Input("faith-job", "data"),
    State("faith-text", "value"),
    prevent_initial_call=True,
)
def to_address(result, model, convention, k, explainers, dataset, n, job, text):
    values = {
        "model": model,
        "text": text if result else None,  # the text enters the address once it was explained
        "convention": convention,
        "k": k,
        "explainers": ",".join(explainers) if explainers and list(explainers) != list(DEFAULT_EXPLAINERS) else None,
        "dataset": dataset,
        "n": n,
        "job": (job or {}).get("id"),
    }
    return query_string(values, PARAMS)


@callback(
    Output("faith-progress", "value"),
    Output("faith-job-status", "children"),
    Output("faith-poll", "disabled", allow_duplicate=True),
    Output("faith-dataset-table", "columns"),
    Output("faith-dataset-table", "data"),
    Output("faith-dataset-summary", "children"),
    Output("faith-export", "disabled"),
    Output("faith-shown-job", "data"),
    Output("faith-examples-source", "data"),
    Input("faith-poll", "n_intervals"),
    State("faith-job", "data"),
    prevent_initial_call=True,
)
def poll_job(_n, job):
    """The job's progress; its table once done. A job that is running, failed or was cancelled leaves the
    last result (its table, summary, examples and export) on screen until a new one arrives, as Census
    does."""
    keep = (no_update,) * 6  # the table (columns, rows), summary, export, shown job and examples
    if not job:
        return no_update, no_update, True, *keep
    try:
        job = client().job(job["id"])
    except ApiError as exc:
        return "0", describe_error(exc, f"Job {job['id']}"), True, *keep
    status = f"{job.status}: {job.done}/{job.total}" + (f" ({job.error})" if job.error else "")
    status += f" · {n_shortfall(job)}" if n_shortfall(job) else ""  # N beyond the data set's size
    if job.status in ("queued", "running"):
        return str(job.progress), status, False, *keep
    if job.status != "done":
        return str(job.progress), status, True, *keep
    try:
        result = client().job_result(job.id)
    except ApiError as exc:
        return "1", describe_error(exc, f"The result of job {job.id}"), True, *keep
    columns, data, summary = dataset_table(result)
    pe = result.per_example
    examples = example_source(
        result.model,
        result.dataset,
        pe.index if pe else [],
        job.params.get("split"),
        allow_offensive=bool(job.params.get("allow_offensive")),
    )
    return "1", status, True, columns, data, summary, False, job.id, examples


def dataset_table(result) -> tuple[list, list, str]:
    """The explainer x metric table of a faithfulness result: its columns, rows and summary line."""
    dump = result.model_dump(include={"intervals", "vs_random", "interval"})
    columns, data = metric_table(
        [r.model_dump(exclude_unset=True) for r in result.rows],
        result.metrics,
        dump.get("intervals"),
        dump.get("vs_random"),
    )
    trunc = result.truncation
    summary = (
        f"{result.model} on {result.dataset} (n = {result.n}, {result.convention}, "
        f"k = {result.k}): accuracy {result.accuracy:.3f}; {trunc.examples_truncated} "
        f"inputs truncated to {trunc.max_tokens} tokens"
        + (
            f", {100 * trunc.human_fraction_lost:.1f}% of human-rationale tokens cut"
            if trunc.human_fraction_lost is not None
            else ""
        )
        + (
            f"; cells: mean [{100 * dump['interval']['level']:.0f} % {dump['interval']['method']} interval over the "
            f"{result.n} examples], a difference from random only when its paired interval excludes 0"
            if dump.get("interval")
            else ""
        )
    )
    return columns, data, summary


@callback(
    Output("faith-download", "data"),
    Input("faith-export", "n_clicks"),
    State("faith-shown-job", "data"),
    prevent_initial_call=True,
)
def export_csv(_n, shown):
    """The CSV of the result on screen (a later job that failed or was cancelled leaves it there)."""
    if not shown:
        return no_update
    try:
        csv_text = client().job_result_csv(shown)
    except ApiError:
        return no_update
    return dcc.send_string(csv_text, f"attnscope-faithfulness-{shown}.csv")
