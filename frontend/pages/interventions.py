"""Interventions: ablate heads, knock out query -> key edges, patch heads or the residual stream from
a corrupted text, read any metric the model allows (``answer_logit_diff`` with two answer tokens),
see the maps of a later layer before and after, the per-head effect grid, the layer x position
patching plot, and the per-head effects over a data set with intervals and corrected p (a job).

Address: ``/interventions?run=ID&kind=knockout&edges=5>1&klayers=1&corrupted=T&metric=M&vlayer=3&hide=first...``
(every control; ``sweep=true`` recomputes the patching plot; ``map=value-weighted`` draws the map before
from the run's value-weighted maps and the map after from the altered run's)."""

import dash
from dash import dcc, html

from attnscope.frontend.intervention_forms import KIND_LABELS, METRICS
from attnscope.frontend.layout import hide_control
from attnscope.frontend.page_common import error_box, panel
from attnscope.frontend.pages import interventions_callbacks, interventions_patching  # noqa: F401  (callbacks)
from attnscope.frontend.pages.interventions_callbacks import METHODS, PARAMS
from attnscope.frontend.pages.interventions_dataset import dataset_panel
from attnscope.frontend.plot_config import graph
from attnscope.frontend.url_state import address_parts, parse_query
from attnscope.frontend.writes_layout import map_kind_control

dash.register_page(__name__, path="/interventions", name="Interventions", order=6, title="attnscope · interventions")


def _text(id_: str, label: str, value, placeholder: str, wide: bool = False) -> list:
    field = dcc.Input(
        id=id_, type="text", value=value or "", placeholder=placeholder, debounce=True,
        className="wide-input" if wide else "",
    )  # fmt: skip
    return [html.Label(label, htmlFor=id_), field]


def _drop(id_: str, label: str, options, value, clearable: bool = False, placeholder: str = "") -> list:
    opts = [o if isinstance(o, dict) else {"label": str(o), "value": o} for o in options]
    field = dcc.Dropdown(
        id=id_, options=opts, value=value, clearable=clearable, placeholder=placeholder, className="small-dropdown"
    )
    return [html.Label(label, htmlFor=id_), field]


def _row(*parts) -> html.Div:
    return html.Div(className="inline", children=[c for part in parts for c in part])


def layout(**query):
    s, problems = parse_query(query, PARAMS)
    kinds = [{"label": label, "value": k} for k, label in KIND_LABELS.items()]
    intervene = panel(
        "Intervene",
        "One intervention at a time. Heads as L{layer}H{head} (or click cells of the effect grid); edges as "
        "query>key (or click cells of the map before the intervention); zero / mean / uniform ablation as "
        "in docs/guide/interventions.md. Patching takes activations from the corrupted text, which must have "
        "as many tokens as the run.",
        _row(_drop("interventions-kind", "intervention", kinds, s["kind"])),
        _row(
            _text("interventions-heads", "heads", s["heads"], "L0H1, L3H2", wide=True),
            _drop("interventions-method", "ablation", METHODS, s["method"]),
        ),
        _row(
            _text("interventions-edges", "edges (query>key)", s["edges"], "5>1, 6>2", wide=True),
            _text("interventions-klayers", "in layers", s["klayers"], "1, 2"),
        ),
        _row(
            [html.Label("residual after block", htmlFor="interventions-rlayer")],
            [dcc.Input(id="interventions-rlayer", type="number", min=0, step=1, value=s["rlayer"], debounce=True)],
            _text("interventions-rpos", "at positions", s["rpos"], "2, 3"),
        ),
        _row(
            _text("interventions-corrupted", "corrupted text", s["corrupted"], "the same text, one word changed", True),
            _drop("interventions-direction", "direction", ("noising", "denoising"), s["direction"]),
        ),
        _row(
            _drop("interventions-metric", "metric", METRICS, s["metric"], True, "the task's default"),
            _text("interventions-answer-a", "correct answer", s["ans_a"], "' Paris'"),
            _text("interventions-answer-b", "wrong answer", s["ans_b"], "' Rome'"),
        ),
        html.Button("Apply", id="interventions-apply", n_clicks=0, className="small-button"),
        html.Div(id="interventions-result", className="result-line", role="status"),
        html.Div(id="interventions-apply-error", className="error", role="alert"),
        _row(
            _drop("interventions-view-layer", "show layer", [], s["vlayer"], placeholder="after the intervention"),
            _drop("interventions-view-head", "head", [], s["vhead"], placeholder="head"),
            [hide_control("interventions-hide", s["hide"])],
            [map_kind_control(s["map"], "interventions-map-kind")],
        ),
        html.Div(id="interventions-map-note", className="hint", role="status"),
        _pair("interventions-clean-map", "interventions-altered-map"),
    )
    effects = panel(
        "Per-head effects",
        "One ablation per head (the chosen kind), batched, with the chosen metric. Beside it: each head's "
        "attention-based importance (mean over rows of its largest weight) against the size of its effect.",
        html.Button("Compute the grid", id="interventions-grid-button", n_clicks=0, className="small-button"),
        html.Div(id="interventions-grid-note", className="hint", role="status"),
        html.Div(id="interventions-grid-error", className="error", role="alert"),
        _pair("interventions-grid", "interventions-importance"),
    )
    patching = panel(
        "Layer × position patching",
        "The residual stream after each block, at each position, alone taken from the corrupted text (noising) "
        "or from the run into the corrupted text (denoising): the metric's change per cell. Click a cell to "
        "set up that residual patch above.",
        html.Button(
            "Patch every layer × position", id="interventions-sweep-button", n_clicks=0, className="small-button"
        ),
        html.Div(id="interventions-sweep-note", className="hint", role="status"),
        html.Div(id="interventions-sweep-error", className="error", role="alert"),
        graph("interventions-sweep"),
    )
    return html.Div(
        children=[
            *address_parts("interventions", s, problems),
            dcc.Store(id="interventions-run-data"),
            dcc.Store(id="interventions-altered"),
            dcc.Store(id="interventions-sweep-on", data=bool(s["sweep"])),
            html.Div(id="interventions-run", className="panel hint"),
            error_box("interventions"),
            intervene,
            patching,
            effects,
            dataset_panel(),
        ]
    )


def _pair(left: str, right: str) -> html.Div:
    """Two figures side by side."""
    return html.Div(className="row", children=[html.Div(graph(g), className="half") for g in (left, right)])
