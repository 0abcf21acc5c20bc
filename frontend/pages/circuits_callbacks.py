"""Callbacks of the Circuits page (``dash.callback``); the circuit comes from ``POST /circuits`` over
HTTP. The result is kept in ``circuits-result-data``; the slider redraws the graph from it (no new
request), a click on a head node navigates to Explore with the clean text and that head."""

from __future__ import annotations

from urllib.parse import urlencode

from dash import Input, Output, State, callback, ctx, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.circuit_figures import circuit_graph_figure, faithfulness_curve_figure, head_label
from attnscope.frontend.page_common import client, describe_error, empty_figure
from attnscope.frontend.url_state import Param, query_string, register_url_sync

TASKS = ("capitals", "ioi", "capital-pair", "induction", "custom", "pairs")
SETS = ("capitals", "ioi")  # built by the API: the items the model solves, one batch of one token length
METRICS = ("answer_logit_diff", "answer_prob", "loss")
METHODS = ("eap", "eap-ig")
ABLATIONS = ("corrupted", "mean")
MAX_PAIRS = 16  # the API's bound on a posted pair set (``MAX_CIRCUIT_PAIRS``)
PAIRS_EXAMPLE = (
    "The capital of France is | The capital of Italy is | Paris | Rome\n"
    "The capital of Italy is | The capital of France is | Rome | Paris"
)
_COPY = "apple river stone cloud music window garden yellow"
_OTHER = "table horse paper night bread silver forest orange"
# the presets a task fills in (``custom``: the user's own texts); their prompts have the same number of
# tokens on GPT-2-like byte-level BPEs (SmolLM2: 5 and 16); the API refuses a pair that does not
_SET = {"clean": None, "corrupted": None, "answer": None, "wrong": None, "metric": "answer_logit_diff"}
PRESETS = {
    "capitals": _SET,
    "ioi": _SET,
    "capital-pair": {"clean": "The capital of France is", "corrupted": "The capital of Italy is",
                 "answer": " Paris", "wrong": " Rome", "metric": "answer_logit_diff"},
    "induction": {"clean": f"{_COPY} {_COPY}", "corrupted": f"{_COPY} {_OTHER}", "answer": None, "wrong": None,
                  "metric": "loss"},
}  # fmt: skip
PARAMS = {
    "model": Param(str, max_len=100),
    "task": Param(str, default="capital-pair", choices=TASKS),
    "clean": Param(str, max_len=1000),
    "corrupted": Param(str, max_len=1000),
    "answer": Param(str, max_len=64),
    "wrong": Param(str, max_len=64),
    "metric": Param(str, default="answer_logit_diff", choices=METRICS),
    "method": Param(str, default="eap", choices=METHODS),
    "steps": Param(int, default=5, lo=1, hi=16),
    "k": Param(int, default=50, lo=1, hi=500),
    "shown": Param(int, default=20, lo=1, hi=500),
    "points": Param(int, default=6, lo=2, hi=11),
    "pairs": Param(str, max_len=4000),
    "ablation": Param(str, default="corrupted", choices=ABLATIONS),
}
register_url_sync("circuits")


def initial_state(state: dict) -> dict:
    """The address's state with the task's preset filled in where the address names no texts."""
    preset = PRESETS.get(state["task"])
    if preset and not state["clean"] and not state["corrupted"] and not state["pairs"]:
        metric = preset["metric"] if state["metric"] == PARAMS["metric"].default else state["metric"]
        state = {**state, **preset, "metric": metric}
    return state


@callback(
    Output("circuits-model", "options"),
    Output("circuits-model", "value"),
    Output("circuits-error", "children"),
    Input("circuits-query", "data"),
    Input("circuits-retry", "n_clicks"),
)
def load_models(query, _retry):
    """The causal LMs of the API (circuits read next-token logits); the address's model when it is one."""
    try:
        listing = client().models()
    except ApiError as exc:
        return [], None, describe_error(exc, "The models could not be loaded")
    names = [m.name for m in listing.models if m.task == "causal-lm"]
    if not names:
        return [], None, "This API serves no causal LM: circuits need one (e.g. smollm2)."
    wanted = (query or {}).get("model")
    if wanted and wanted not in names:
        return [{"label": n, "value": n} for n in names], names[0], f"Model '{wanted}' is not a causal LM here."
    return [{"label": n, "value": n} for n in names], wanted or names[0], ""


@callback(
    Output("circuits-clean", "value"),
    Output("circuits-corrupted", "value"),
    Output("circuits-answer", "value"),
    Output("circuits-wrong", "value"),
    Output("circuits-metric", "value"),
    Input("circuits-task", "value"),
    prevent_initial_call=True,
)
def fill_task(task):
    """A task's preset pair into the fields (``custom`` keeps what is there)."""
    preset = PRESETS.get(task)
    if preset is None:
        return (no_update,) * 5
    return preset["clean"], preset["corrupted"], preset["answer"], preset["wrong"], preset["metric"]


class PairsError(ValueError):
    """Pasted pairs the page cannot read; the message says which line and what to change."""


def parse_pairs(text: str, metric: str) -> list[dict]:
    """Pasted pairs, one a line: ``clean | corrupted`` (metric ``loss``) or ``clean | corrupted | answer |
    wrong`` (the answer metrics; a leading space is added to an answer that lacks one, so ``Paris`` is
    the token `` Paris``). Blank lines are skipped; at most ``MAX_PAIRS``."""
    pairs = []
    for number, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split("|")]
        want = 2 if metric == "loss" else 4
        if len(parts) != want or not all(parts):
            form = "clean | corrupted" if metric == "loss" else "clean | corrupted | answer | wrong answer"
            raise PairsError(f"line {number} has {len(parts)} non-empty fields; with {metric} write {form}")
        pair = {"clean": parts[0], "corrupted": parts[1]}
        if metric != "loss":
            pair.update(answer=_spaced(parts[2]), wrong=_spaced(parts[3]))
        pairs.append(pair)
    if not pairs:
        raise PairsError("paste at least one pair, one a line: clean | corrupted | answer | wrong answer")
    if len(pairs) > MAX_PAIRS:
        raise PairsError(f"{len(pairs)} pairs: the page sends at most {MAX_PAIRS} (run a circuit job for more)")
    return pairs


def _spaced(answer: str) -> str:
    return answer if answer.startswith(" ") else " " + answer


def circuit_body(
    model, clean, corrupted, metric, answer, wrong, method, steps, k, points, pairs=None, ablation="corrupted",
    task=None,
) -> dict:  # fmt: skip
    """The ``CircuitCreate`` body of the page's fields (answers only for the answer metrics); ``pairs``:
    the pasted pairs' text (``parse_pairs``), sent instead of the clean and corrupted texts; ``task``
    (capitals, ioi): the API's set of the items the model solves, instead of either."""
    body = {"model": model, "metric": metric, "method": method, "steps": steps or 5, "k": k or 50,
            "curve_points": points or 6, "ablation": ablation or "corrupted"}  # fmt: skip
    if task in SETS:
        return {**body, "task": task}
    if pairs is not None:
        return {**body, "pairs": parse_pairs(pairs, metric)}
    body.update(clean=clean or "", corrupted=corrupted or "")
    if metric != "loss":
        body.update(answer=answer or None, wrong=wrong or None)
    return body


@callback(
    Output("circuits-result-data", "data"),
    Output("circuits-result", "children"),
    Input("circuits-compute", "n_clicks"),
    Input("circuits-model", "value"),
    State("circuits-query", "data"),
    State("circuits-clean", "value"),
    State("circuits-corrupted", "value"),
    State("circuits-metric", "value"),
    State("circuits-answer", "value"),
    State("circuits-wrong", "value"),
    State("circuits-method", "value"),
    State("circuits-steps", "value"),
    State("circuits-k", "value"),
    State("circuits-points", "value"),
    State("circuits-task", "value"),
    State("circuits-pairs", "value"),
    State("circuits-ablation", "value"),
)
def compute(
    clicks, model, query, clean, corrupted, metric, answer, wrong, method, steps, k, points, task, pairs, ablation
):
    """The circuit: on the button, or when the page opens on an address that names its texts."""
    if not model:
        return None, "No causal LM to run on."
    named = (query or {}).get("clean") or (query or {}).get("pairs")
    if ctx.triggered_id != "circuits-compute" and not clicks and not named:
        return None, "Pick a task or type a clean and a corrupted text, then press Find the circuit."
    try:
        body = circuit_body(
            model, clean, corrupted, metric, answer, wrong, method, steps, k, points,
            pairs if task == "pairs" else None, ablation, task,
        )  # fmt: skip
        res = client().circuit(body)
    except PairsError as exc:
        return no_update, f"The pairs could not be read: {exc}"
    except ApiError as exc:
        return no_update, f"The circuit was refused (the graph below is the last one found): {exc.detail}"
    if task == "pairs":
        clean = body["pairs"][0]["clean"]  # a head opens on Explore with the first pair's clean text
    if res.task_pairs:
        clean = res.task_pairs[0].clean
    data = {**res.model_dump(), "model": model, "clean": clean, "metric": metric}
    top = res.edges[0] if res.edges else None
    line = (
        f"{res.method.upper()} over {res.n_edges:,} edges ({res.n_layers} layers × {res.n_heads} heads, "
        f"{res.n_kv_heads} key/value heads) · {metric}: clean {res.m_clean:.3f}, corrupted {res.m_corrupted:.3f}, "
        f"circuit of {len(res.edges)} edges {res.m_circuit:.3f} · faithfulness {res.faithfulness:.3f}"
    )
    if res.task_pairs:
        first = ", ".join(p.label for p in res.task_pairs[:3])
        line += f" · the {len(res.task_pairs)} {task} pairs it solves ({first}…)"
    if res.n_pairs > 1 or res.ablation != "corrupted":
        line += f" · means over {res.n_pairs} pairs, edges outside the circuit {res.ablation}-ablated"
    if top:
        line += f" · top edge {top.sender} → {top.receiver} ({top.score:+.4g})"
    return data, line


@callback(
    Output("circuits-graph", "figure"),
    Output("circuits-curve", "figure"),
    Output("circuits-shown", "max"),
    Input("circuits-result-data", "data"),
    Input("circuits-shown", "value"),
)
def draw(data, shown):
    """The graph of the top ``shown`` kept edges and the faithfulness curve."""
    if not data:
        blank = empty_figure("Press Find the circuit.")
        return blank, blank, no_update
    n = len(data["edges"])
    shown = _count(shown, n)
    fig = circuit_graph_figure(
        data["edges"], data["n_layers"], data["n_heads"], data["n_kv_heads"], min(shown or n, n),
        title=f"Circuit of {data['model']}: top {min(shown or n, n)} of {n} kept edges",
    )  # fmt: skip
    curve = faithfulness_curve_figure(data["curve"], data["m_clean"], data["m_corrupted"], data["metric"])
    return fig, curve, max(n, 2)


def _count(value, default: int) -> int:
    """The slider's value as a whole number (a range input may send text), else ``default``."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def explore_href(model: str, text: str, label: str) -> str:
    """Explore's address for ``label`` (``L{l}H{h}``) on a run of ``text`` (made by Explore)."""
    layer = label[1:].split("H")[0]
    return "/?" + urlencode({"model": model, "text": text, "head": label, "layer": layer})


@callback(
    Output("circuits-nav", "href"),
    Output("circuits-explore-link", "children"),
    Input("circuits-graph", "clickData"),
    State("circuits-result-data", "data"),
    prevent_initial_call=True,
)
def open_head(click, data):
    """A click on a head node opens that head on Explore (a run of the clean text)."""
    if not click or not click.get("points") or not data:
        return no_update, no_update
    label = click["points"][0].get("customdata")
    if not isinstance(label, str) or head_label(_node(label)) is None:
        return no_update, "Click a head (a round node) to open it on Explore."
    return explore_href(data["model"], data["clean"], label), f"Opening {label} on Explore…"


def _node(label: str) -> str:
    """``"L3H2"`` -> ``"a3.h2"``."""
    layer, _, head = label[1:].partition("H")
    return f"a{layer}.h{head}"


@callback(
    Output("circuits-url", "data"),
    Input("circuits-model", "value"),
    Input("circuits-task", "value"),
    Input("circuits-clean", "value"),
    Input("circuits-corrupted", "value"),
    Input("circuits-answer", "value"),
    Input("circuits-wrong", "value"),
    Input("circuits-metric", "value"),
    Input("circuits-method", "value"),
    Input("circuits-steps", "value"),
    Input("circuits-k", "value"),
    Input("circuits-shown", "value"),
    Input("circuits-points", "value"),
    Input("circuits-pairs", "value"),
    Input("circuits-ablation", "value"),
    prevent_initial_call=True,
)
def to_address(model, task, clean, corrupted, answer, wrong, metric, method, steps, k, shown, points, pairs, ablation):
    """Every choice of the page in its address (a pasted link reopens and recomputes the same circuit)."""
    values = dict(model=model, task=task, clean=clean, corrupted=corrupted, answer=answer or None)
    values.update(wrong=wrong or None, metric=metric, method=method, steps=steps, k=k, points=points)
    values.update(pairs=(pairs or None) if task == "pairs" else None, ablation=ablation)
    values["shown"] = _count(shown, None)
    return query_string(values, PARAMS)
