"""Callbacks of the explore page's output panels (``llm_layout``): the prediction panel, and for causal
LMs the Generate button and the step slider. Data from the API over HTTP only."""

from __future__ import annotations

from dash import Input, Output, State, callback, clientside_callback, ctx, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.llm_figures import (
    POSITION_WINDOW,
    actual_next,
    class_figure,
    generation_segments,
    generation_step_figure,
    next_token_figure,
    position_options,
    step_marks,
)
from attnscope.frontend.page_common import client, empty_figure
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.run_state import run_record
from attnscope.frontend.sink_hiding import HIDES, hidden_positions
from attnscope.server.schemas import MAX_NEW_TOKENS, MAX_TEMPERATURE

HIDDEN = "llm-hidden"
LONG_STORE = 512  # tokens above which the prediction store keeps no per-position top-k (render_prediction)


def _with(base: str, hidden: bool) -> str:
    return f"{base} {HIDDEN}" if hidden else base


def _model_task(model: str | None) -> str | None:
    if not model:
        return None
    try:
        return next((m.task for m in client().models().models if m.name == model), None)
    except ApiError:
        return None


@callback(Output("generate-section", "className"), Input("model-dropdown", "value"))
def show_generate(model):
    """The Generate panel is there for causal LMs only."""
    return _with("panel half", _model_task(model) != "causal-lm")


def generate_options(max_new, mode, temperature, seed) -> tuple[dict | None, str]:
    """``(the run's "generate" body, "")``, or ``(None, what to change)`` for a field left empty or not a
    number (the API checks the bounds and says them)."""
    if max_new is None:
        return None, f"max new tokens: type a whole number from 1 to {MAX_NEW_TOKENS}."
    body: dict = {"max_new_tokens": max_new, "seed": 0 if seed is None else seed}
    if mode == "sample":
        if temperature is None:
            return None, f"temperature: type a number above 0 and at most {MAX_TEMPERATURE:g} (or choose greedy)."
        body["temperature"] = temperature
    else:
        body["greedy"] = True
    return body, ""


@callback(
    Output("run-store", "data", allow_duplicate=True),
    Output("generate-error", "children"),
    Input("generate-button", "n_clicks"),
    State("model-dropdown", "value"),
    State("text-input", "value"),
    State("gen-max-new", "value"),
    State("gen-mode", "value"),
    State("gen-temperature", "value"),
    State("gen-seed", "value"),
    prevent_initial_call=True,
)
def generate(n_clicks, model, text, max_new, mode, temperature, seed):
    if not n_clicks:
        return no_update, no_update
    if not model:
        return no_update, "Pick a model first."
    body, problem = generate_options(max_new, mode, temperature, seed)
    if body is None:
        return no_update, problem
    try:
        run = client().create_run(model, text or "", generate=body, thumbnails=True)
    except ApiError as exc:
        return no_update, str(exc)
    return run_record(run).to_store(), ""


@callback(
    Output("prediction-store", "data"),
    Output("prediction-position", "options"),
    Output("prediction-position", "value"),
    Output("prediction-position-box", "className"),
    Output("gen-step", "max"),
    Output("gen-step-marks", "children"),
    Output("gen-step", "value"),
    Output("gen-step-box", "className"),
    Output("gen-layer", "options"),
    Output("gen-layer", "value"),
    # the page's run, not the session's store: reopening the page on the session's own run leaves run-store
    # untouched (resolve answers no_update), and Dash then never calls a callback that waits on it
    Input("explore-run-data", "data"),
    State("selected-head", "data"),
    State("explore-query", "data"),
)
def load_prediction(data, selected, query):
    """The run's prediction: the record's summary, or for causal LMs (and records kept without a
    prediction) the whole one with its per-position top-k from ``GET /runs/{id}``; the positions to
    choose from, and the generation's steps. The address's step, position and step layer apply to
    the run it names."""
    nothing = (None, [], None, _with("inline", True), 1, [], 1, HIDDEN, [], None)
    run = stored_run(data)
    if not run:
        return nothing
    if run.prediction is not None and run.prediction.kind != "next-token":
        pred = run.prediction.model_dump()
    else:
        try:  # a long run's per-position lists stay on the server side (render_prediction reads them)
            pred = client().run(run.id, summary=run.n_tokens > LONG_STORE).prediction.model_dump()
        except ApiError as exc:
            return ({"error": str(exc)},) + nothing[1:]
    tokens = run.tokens
    causal = pred["kind"] == "next-token"
    n_prompt = pred.get("prompt_tokens") or len(tokens)
    steps = run.generation.steps if run.generation else []
    n_layers = run.n_layers
    layer = (selected or {}).get("layer", 0)
    asked = query if (query or {}).get("run") == run.id else {}  # the address's view of this run
    step = asked.get("step") if steps and 1 <= (asked.get("step") or 0) <= len(steps) else 1
    position = asked.get("position") if 0 <= (asked.get("position") or -1) < len(tokens) else None
    if position is None:
        position = steps[step - 1].query if steps else n_prompt - 1
    layer = asked.get("step_layer") if asked.get("step_layer") is not None else layer
    # a long run's per-position top-k (3.4 MB of JSON at 4,096 tokens) stays on the server side: the store
    # would travel to the browser and back with every position chosen; the figure reads it from the API
    stored = {k: v for k, v in pred.items() if k not in ("top_k", "loss")} if run.n_tokens > LONG_STORE else pred
    return (
        stored,
        position_options(tokens, n_prompt, position) if causal else [],
        position if causal else None,
        _with("inline", not causal),
        max(1, len(steps)),
        [html.Option(value=k, label=v) for k, v in step_marks(len(steps)).items()] if steps else [],
        step,
        "" if steps else HIDDEN,
        [{"label": f"layer {l}", "value": l} for l in range(n_layers)],
        layer if 0 <= layer < n_layers else 0,
    )


@callback(
    Output("prediction-figure", "figure"),
    Input("prediction-position", "value"),
    Input("prediction-store", "data"),
    State("run-store", "data"),
)
def render_prediction(position, pred, data):
    run = stored_run(data)
    if not run or not pred:
        return empty_figure("Run a text: the model's prediction shows here.")
    if "error" in pred:
        return empty_figure(f"The prediction could not be loaded: {pred['error']}")
    if pred["kind"] == "classification":
        return class_figure(pred["labels"], pred["probs"], pred["predicted"])
    if pred["kind"] != "next-token":
        return empty_figure(
            f"{run.model} outputs an embedding ({pred.get('dim')} dimensions): no class or token to predict.",
            height=120,
        )
    tokens = run.tokens
    if position is None or not 0 <= position < len(tokens):
        position = (pred.get("prompt_tokens") or len(tokens)) - 1
    if "top_k" not in pred:  # a long run's (load_prediction): read from the API, not sent by the browser
        try:
            pred = client().run(run.id).prediction.model_dump()
        except ApiError as exc:
            return empty_figure(f"The prediction could not be loaded: {exc}")
    loss = (pred.get("loss") or [None] * len(tokens))[position]
    actual = actual_next(run.token_ids, tokens, position)
    return next_token_figure(pred["top_k"][position], position, tokens[position], actual, loss)


@callback(
    Output("prediction-position", "value", allow_duplicate=True),
    Input("gen-step", "value"),
    State("run-store", "data"),
    State("prediction-position", "value"),
    State("explore-query", "data"),
    prevent_initial_call=True,
)
def step_to_position(step, data, position, query):
    """Stepping through a generation shows, in the prediction panel, the distribution each token was
    chosen from (the position before it); the step an opened link sets keeps the link's position."""
    run = stored_run(data)
    steps = run.generation.steps if run and run.generation else []
    step = _step_number(step)
    if step is None or not 1 <= step <= len(steps):
        return no_update
    asked = query if run and (query or {}).get("run") == run.id else {}
    if asked.get("step") == step and asked.get("position") is not None and position == asked["position"]:
        return no_update  # the link's own position, set with its step by load_prediction
    return steps[step - 1].query


def _step_number(value) -> int | None:
    """The range input's value (a number, or its text) as a step number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# a head clicked in the model view shows its layer in the generation view too (in the browser: a click
# costs no round trip here)
clientside_callback(
    """function (selected, options, run) {
        var steps = run && run.generation && run.generation.steps;
        var known = selected && options && selected.layer >= 0 && selected.layer < options.length;
        if (!steps || !steps.length || !known || selected.drawn) {
            /* no generation view to follow the click; or the grid's own first selection (drawn), which
               must not override the step layer an opened link asked for */
            return window.dash_clientside.no_update;
        }
        return selected.layer;
    }""",
    Output("gen-layer", "value", allow_duplicate=True),
    Input("selected-head", "data"),
    State("gen-layer", "options"),
    State("run-store", "data"),
    prevent_initial_call=True,
)


@callback(
    Output("prediction-position", "options", allow_duplicate=True),
    Input("prediction-position", "value"),
    State("run-store", "data"),
    prevent_initial_call=True,
)
def recentre_positions(position, data):
    """A long run's position menu, re-centred on the position chosen (``position_options``)."""
    run = stored_run(data)
    if not run or position is None or run.n_tokens <= 2 * POSITION_WINDOW + 1 or not run.causal:
        return no_update
    n_prompt = run.generation.steps[0].position if run.generation and run.generation.steps else run.n_tokens
    return position_options(run.tokens, n_prompt, position)


def _text_view(tokens: list[str], n_prompt: int, position: int | None) -> list:
    return [
        html.Span(token, className=f"gen-token gen-{kind}", title=f"position {i} ({kind})")
        for i, (token, kind) in enumerate(generation_segments(tokens, n_prompt, position))
    ]


@callback(
    Output("gen-step-figure", "figure"),
    Output("gen-text", "children"),
    Output("gen-step-label", "children"),
    Input("gen-step", "value"),
    Input("gen-layer", "value"),
    Input("explore-run-data", "data"),  # as load_prediction
    Input("gen-scaling", "value"),
    Input("gen-hide", "value"),
)
def render_step(step, layer, data, scaling, hide):
    run = stored_run(data)
    if not run or not run.generation or not run.generation.steps:
        # a head click (or a step view control) on a run without generation: nothing to redraw (the placeholder
        # stays; Plotly would draw it again)
        if ctx.triggered_id in ("gen-step", "gen-layer", "gen-scaling", "gen-hide"):
            return no_update, no_update, no_update
        return empty_figure("Press Generate: each generated token's attention shows here."), [], "step"
    steps = run.generation.steps
    step = min(max(_step_number(step) or 1, 1), len(steps))
    layer = 0 if layer is None else int(layer)
    current = steps[step - 1]
    n_prompt = steps[0].position
    text = _text_view(run.tokens, n_prompt, current.position)
    label = f"step {step} of {len(steps)}"
    try:
        rows = client().rows(run.id, current.query)  # [layer, head, key]
    except ApiError as exc:
        return empty_figure(f"The attention rows could not be loaded: {exc.detail}"), text, label
    if not 0 <= layer < rows.shape[0]:
        layer = 0
    hide = hide if hide in HIDES else "none"
    hidden = hidden_positions(hide, run.n_tokens, run.special)
    fig = generation_step_figure(
        rows[layer], run.tokens, n_prompt, current.model_dump(), step, len(steps), layer, run.kv_head_of,
        scaling=scaling or "global", hidden=hidden, hide=hide,
    )  # fmt: skip
    return fig, text, label
