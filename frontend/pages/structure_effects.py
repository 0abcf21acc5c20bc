"""The Structure page's causal panel: each head's type beside its ablation effect, and a type score
(induction, previous-token, sink, ...) against that effect; for a causal LM also each head's direct
logit attribution (DLA) of what the metric reads, against the same effect, with their rank
correlation (``dla_beside``). Its own layout piece and callbacks, so the Structure page only places it."""

from __future__ import annotations

from dash import Input, Output, State, callback, dash_table, dcc, html

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.dla_beside import agreement_text, dla_column, dla_effect_scatter
from attnscope.frontend.intervention_figures import TYPE_SCORES, pick_type_score, type_effect_rows, type_effect_scatter
from attnscope.frontend.page_common import client, empty_figure, panel
from attnscope.frontend.plot_config import graph
from attnscope.frontend.run_record import stored_run


def effects_panel() -> html.Section:
    """The panel (computed on request: one ablation per head is a few seconds to minutes)."""
    return panel(
        "Type and causal effect",
        (
            "Each head's type (from what it attends to) beside what zero-ablating it alone does to the "
            "output (Δ of the run's metric: p(predicted class), cosine distance, or next-token loss). For a causal "
            "LM also each head's direct logit attribution (DLA) of the logit the metric reads, with the final norm "
            "frozen: a head whose whole effect is its direct write has an effect of about −DLA on a logit "
            "difference and +DLA (1 − p) on the loss."
        ),
        html.Div(
            className="inline",
            children=[
                html.Button("Measure the effects", id="structure-effects-button", n_clicks=0, className="small-button"),
                html.Label("type score", htmlFor="structure-effects-score"),
                dcc.Dropdown(
                    id="structure-effects-score",
                    options=[{"label": s, "value": s} for s in TYPE_SCORES],
                    placeholder="induction",
                    className="small-dropdown",
                ),
            ],
        ),
        dcc.Store(id="structure-effects-data"),
        html.Div(id="structure-effects-note", className="hint", role="status"),
        html.Div(
            className="row",
            children=[
                html.Div(graph("structure-effects-scatter"), className="half"),
                html.Div(
                    dash_table.DataTable(
                        id="structure-effects-table",
                        columns=COLUMNS,
                        sort_action="native",
                        style_table={"overflowX": "auto"},
                        style_cell={"textAlign": "left", "fontFamily": "inherit"},
                    ),
                    className="half",
                ),
            ],
        ),
        html.Div(graph("structure-effects-dla"), className="half"),
    )


COLUMNS = [{"name": n, "id": n} for n in ("head", "type", "effect")]
DLA_COLUMNS = [*COLUMNS, {"name": "DLA", "id": "DLA"}]


@callback(
    Output("structure-effects-data", "data"),
    Output("structure-effects-note", "children"),
    Input("structure-effects-button", "n_clicks"),
    State("structure-run-data", "data"),
    prevent_initial_call=True,
)
def measure(_clicks, data):
    run = stored_run(data)
    if not run:
        return None, "No run yet."
    try:
        grid = client().head_effects(run.id, {"method": "zero"})
        heads = [h.model_dump(by_alias=True) for h in client().heads(run.id).heads]
    except ApiError as exc:
        return None, f"The effects could not be measured: {exc.detail}"
    rho = grid.rank_agreement.rho
    note = f"{len(heads)} heads in {grid.seconds:.1f} s; metric Δ {grid.metric}"
    if rho is not None:
        note += f"; Spearman ρ of |effect| and attention-based importance {rho:.2f}"
    dla = grid.dla_agreement.model_dump() if grid.dla_agreement is not None else None
    if grid.dla is not None:
        note += "; " + agreement_text(dla, grid.dla_against)
    note += "; one example (n = 1), so no interval over examples: the Interventions page's data-set panel gives"
    note += " each head's interval over N examples and its corrected p"
    data = {"effect": grid.effect, "metric": grid.metric, "heads": heads}
    if grid.dla is not None:
        data.update(dla=grid.dla, dla_agreement=dla, dla_against=grid.dla_against)
    return data, note


@callback(
    Output("structure-effects-scatter", "figure"),
    Output("structure-effects-table", "data"),
    Output("structure-effects-table", "columns"),
    Output("structure-effects-dla", "figure"),
    Input("structure-effects-data", "data"),
    Input("structure-effects-score", "value"),
)
def render(data, wanted):
    if not data:
        ask = "Press “Measure the effects”."
        return empty_figure(ask), [], COLUMNS, empty_figure(ask)
    score = pick_type_score(data["heads"], wanted or "induction")
    rows = type_effect_rows(data["heads"], data["effect"])
    columns = COLUMNS
    if data.get("dla") is not None:
        rows, columns = dla_column(rows, data["dla"]), DLA_COLUMNS
        dla = dla_effect_scatter(
            data["dla"], data["effect"], data["metric"], data["dla_against"], data.get("dla_agreement")
        )
    else:
        dla = empty_figure("No direct logit attribution: the run's metric reads no logit of a causal LM.")
    if score is None:
        return empty_figure("This run's heads carry no type scores."), rows, columns, dla
    return type_effect_scatter(data["heads"], data["effect"], score, data["metric"]), rows, columns, dla
