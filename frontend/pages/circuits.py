"""Circuits: the head-level circuit of a clean/corrupted text pair (EAP or EAP-IG over every edge,
``POST /api/v1/circuits``), drawn as a graph (layers top to bottom, heads and MLPs as nodes, edges
coloured by sign and sized by score, a slider for how many are drawn) beside its faithfulness curve;
a click on a head opens it on Explore.

Tasks: ``capitals`` and ``ioi`` ask the API for its set of the items the model solves (one batch of
one token length, at most 16 pairs); ``capital-pair`` and ``induction`` fill in one pair; ``custom``
keeps the typed texts; ``pairs`` sends the pasted pairs.

Address: ``/circuits?model=M&task=capital-pair&clean=…&corrupted=…&answer=…&wrong=…&metric=…&method=eap
&steps=5&k=50&shown=20&points=6&ablation=corrupted`` (every choice of the page; task ``pairs`` adds
``pairs=…``, the pasted pairs, one a line: ``clean | corrupted | answer | wrong``)."""

import dash
from dash import dcc, html

from attnscope.frontend.page_common import control, error_box, model_picker, panel
from attnscope.frontend.pages import circuits_callbacks  # noqa: F401  (registers this page's callbacks)
from attnscope.frontend.pages.circuits_callbacks import (
    ABLATIONS,
    METHODS,
    METRICS,
    PAIRS_EXAMPLE,
    PARAMS,
    TASKS,
    initial_state,
)
from attnscope.frontend.plot_config import graph
from attnscope.frontend.url_state import address_parts, parse_query

dash.register_page(__name__, path="/circuits", name="Circuits", order=6.5, title="attnscope · circuits")


def _dropdown(id_: str, values, value) -> dcc.Dropdown:
    return dcc.Dropdown(
        id=id_, options=[{"label": v, "value": v} for v in values], value=value, clearable=False,
        className="small-dropdown",
    )  # fmt: skip


def _text(id_: str, value: str, placeholder: str = "") -> dcc.Input:
    return dcc.Input(
        id=id_, type="text", value=value or "", placeholder=placeholder, debounce=True, className="wide-input"
    )


def layout(**query):
    given, problems = parse_query(query, PARAMS)
    state = initial_state(given)  # the controls show the task's preset; the query store keeps the address's
    controls = html.Div(
        className="controls",
        children=[
            model_picker("circuits-model", "Causal LM"),
            control("Task", _dropdown("circuits-task", TASKS, state["task"])),
            control("Clean text", _text("circuits-clean", state["clean"]), size="grow"),
            control(
                "Corrupted text (the same number of tokens)",
                _text("circuits-corrupted", state["corrupted"]),
                size="grow",
            ),
        ],
    )
    pairs = html.Div(
        className="controls",
        children=[
            control(
                "Pairs (task pairs; one a line: clean | corrupted | answer | wrong, every text the same number "
                "of tokens, at most 16)",
                dcc.Textarea(
                    id="circuits-pairs",
                    value=state["pairs"] or "",
                    placeholder=PAIRS_EXAMPLE,
                    rows=3,
                    className="text-input",
                ),
                size="grow",
            ),  # fmt: skip
            control("Ablation", _dropdown("circuits-ablation", ABLATIONS, state["ablation"])),
        ],
    )
    options = html.Div(
        className="controls",
        children=[
            control("Metric", _dropdown("circuits-metric", METRICS, state["metric"])),
            control("Answer (one token)", _text("circuits-answer", state["answer"], "' Paris'"), size="small"),
            control("Wrong answer", _text("circuits-wrong", state["wrong"], "' Rome'"), size="small"),
            control("Method", _dropdown("circuits-method", METHODS, state["method"])),
            control(
                "EAP-IG steps",
                dcc.Input(id="circuits-steps", type="number", min=1, max=16, step=1, value=state["steps"]),
                size="small",
            ),
            control(
                "Edges kept (k)",
                dcc.Input(id="circuits-k", type="number", min=1, max=500, step=1, value=state["k"]),
                size="small",
            ),
            control(
                "Curve points",
                dcc.Input(id="circuits-points", type="number", min=2, max=11, step=1, value=state["points"]),
                size="small",
            ),
            html.Button("Find the circuit", id="circuits-compute", n_clicks=0, className="small-button"),
        ],
    )
    shown = panel(
        "Circuit graph",
        "The embedding on top, one row per layer (its heads, then its MLP), the logits at the bottom. "
        "Red: patching the edge with its corrupted value raises the metric; blue: lowers it. Width: |score|. "
        "q inputs solid, k dashed, v dotted (a key/value head's input ends between the query heads that "
        "share it). Click a head to open it on Explore.",
        html.Label("edges drawn", htmlFor="circuits-shown"),
        dcc.Input(
            type="range",
            id="circuits-shown",
            min=1,
            max=max(state["k"], 2),
            step=1,
            value=state["shown"],
        ),  # fmt: skip
        graph("circuits-graph"),
        html.Div(id="circuits-explore-link", className="hint", role="status"),
    )
    curve = panel(
        "Faithfulness curve",
        "The metric when every edge outside the top k is patched with its corrupted value, as a share of "
        "the clean-minus-corrupted gap (1: the circuit does all the full model does; 0: nothing).",
        graph("circuits-curve"),
    )
    return html.Div(
        children=[
            *address_parts("circuits", given, problems),
            dcc.Store(id="circuits-result-data"),
            dcc.Location(id="circuits-nav", refresh="callback-nav"),
            error_box("circuits"),
            panel("Clean and corrupted inputs", None, controls, pairs, options),
            html.Div(id="circuits-result", className="panel hint", role="status"),
            shown,
            curve,
        ]
    )
