"""The structure page's head-types panel: every head's type scores (sink, previous-token, duplicate,
induction, ...; ``GET /runs/{id}/heads``) as a layer x head map, and the heads that carry each type.
Layout (``head_types_panel``) and callbacks; data from the API over HTTP only."""

from __future__ import annotations

from dash import Input, Output, State, callback, dcc, html

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.head_type_figures import SCORE_NAMES, head_type_figure, labelled_heads, score_names
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.pages.structure_progress import progress_line, running
from attnscope.frontend.plot_config import graph
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.run_state import NO_RUN

# the types listed under the map, when a head carries them (decoder LLMs: sink and induction first)
LISTED = ("sink", "induction", "previous", "duplicate", "cls-sink", "sep-sink")
SHOWN = 6  # heads named per type; the map shows the rest


def head_types_panel() -> html.Section:
    return html.Section(
        className="panel",
        id="head-types-section",
        children=[
            html.H2("Head types"),
            html.P(
                "Each head's score for one type (0..1). Sink: mean attention on the first position (decoder LLMs "
                "park attention there); induction and duplicate: measured on 30 random tokens repeated once "
                "(causal LMs; encoders: 20 tokens between [CLS] and [SEP]). Under grouped-query attention the "
                "heads are grouped by the key/value head they share.",
                className="hint",
            ),
            html.Div(
                className="inline",
                children=[
                    html.Label("type", htmlFor="head-type-score"),
                    dcc.Dropdown(id="head-type-score", clearable=False, className="wide-dropdown"),
                ],
            ),
            dcc.Store(id="head-types-data"),
            progress_line("heads"),
            html.Div(id="head-types-summary", **{"aria-live": "polite"}),
            graph("head-type-figure"),
        ],
    )


def summary(records: list[dict], kv_head_of: list[int] | None, probe: str | None) -> list:
    """One line per listed type a head carries: how many heads, the strongest by name with its score."""
    items = []
    for label in LISTED:
        found = labelled_heads(records, label, kv_head_of)
        if not found:
            continue
        named = ", ".join(f"{name} {score:.2f}" for name, score in found[:SHOWN])
        more = f", … ({len(found) - SHOWN} more)" if len(found) > SHOWN else ""
        items.append(html.Li([html.B(f"{label}: {len(found)} head{'s' * (len(found) != 1)}"), f" — {named}{more}"]))
    if not items:
        items.append(html.Li("No head passes a type's threshold on this run."))
    note = [html.P(f"Probe: {probe}.", className="hint")] if probe else []
    return [html.Ul(items, className="head-types-list", id="head-types-list")] + note


@callback(
    Output("head-types-data", "data"),
    Output("head-type-score", "options"),
    Output("head-type-score", "value"),
    Output("head-types-summary", "children"),
    Input("structure-run-data", "data"),
    running=running("heads"),
)
def load_head_types(data):
    run = stored_run(data)
    if not run:
        return None, [], None, ""
    try:
        data = client().heads(run.id)
    except ApiError as exc:
        return None, [], None, html.P(f"Head types could not be computed: {exc.detail}", className="error")
    records = [h.model_dump(by_alias=True) for h in data.heads]  # dicts: "self", absent scores left out
    names = score_names(records)
    default = "sink" if "sink" in names else ("previous" if "previous" in names else (names or [None])[0])
    options = [{"label": SCORE_NAMES.get(n, n), "value": n} for n in names]
    return records, options, default, summary(records, run.kv_head_of, data.probe)


@callback(
    Output("head-type-figure", "figure"),
    Input("head-type-score", "value"),
    Input("head-types-data", "data"),
    State("structure-run-data", "data"),
)
def render_head_types(score, records, data):
    run = stored_run(data)
    if not run:
        return empty_figure(NO_RUN)
    if not records or not score:
        return empty_figure("No head types for this run.")
    return head_type_figure(records, score, run.n_layers, run.n_heads, run.kv_head_of)
