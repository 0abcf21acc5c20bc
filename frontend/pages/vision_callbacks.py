"""Callbacks of the vision page (``dash.callback``); all data comes from the API over HTTP."""

from __future__ import annotations

import base64
import io

import numpy as np
from dash import ALL, Input, Output, State, callback, ctx, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.figures import thumbnail_src
from attnscope.frontend.map_kind import shown_id
from attnscope.frontend.page_common import client, describe_error
from attnscope.frontend.page_common import empty_figure as _empty
from attnscope.frontend.run_record import RunRecord, stored_run
from attnscope.frontend.url_state import Param, query_string, register_url_sync
from attnscope.frontend.vision_figures import (
    conv_vs_attention_figure,
    grid_cell,
    image_figure,
    query_pixel_figure,
    rollout_overlay_figure,
)
from attnscope.frontend.writes_layout import MAP_KINDS

PARAMS = {
    "model": Param(str, max_len=100),
    "sample": Param(int, lo=0, hi=1_000_000),
    "run": Param(str, max_len=64),
    "layer": Param(int, lo=0, hi=1000),
    "row": Param(int, lo=0, hi=10_000),
    "col": Param(int, lo=0, hi=10_000),
    "map": Param(str, default="attention", choices=MAP_KINDS),  # the map kind of the query-pixel and model views
}
register_url_sync("vision")


def decode_upload(contents: str | None) -> bytes:
    """The bytes of a ``dcc.Upload`` data URL (``data:<type>;base64,<data>``); ``ValueError`` with a
    message fit for the page when it is not one (a malformed upload was a 500)."""
    if not contents or not isinstance(contents, str) or "," not in contents:
        raise ValueError("The upload is not a file the browser could read; choose a PNG or JPEG image.")
    head, data = contents.split(",", 1)
    if ";base64" not in head:
        raise ValueError("The upload is not base64-encoded; choose a PNG or JPEG image.")
    try:
        return base64.b64decode(data, validate=True)
    except (ValueError, TypeError):
        raise ValueError("The upload is damaged (its data is not valid base64); choose the image again.") from None


def _decode_png(blob: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(blob)))


def dataset_for(model: str | None) -> str:
    """MNIST digits for the zoo's digit classifiers, real photos for the pretrained DINOv2."""
    return "photos" if model and model.startswith("dinov2") else "mnist"


@callback(
    Output("vision-model", "options"),
    Output("vision-model", "value"),
    Output("vision-status", "children"),
    Output("vision-status", "className"),
    Input("vision-query", "data"),
)
def load_models(query):
    try:
        models = [m for m in client().models().models if m.modality == "vision"]
    except ApiError as exc:
        return [], None, f"API unavailable: {exc}", "notice"
    options = [
        {"label": f"{m.name} · {m.family}" + (f" · {m.accuracy:.1%}" if m.accuracy else ""), "value": m.name}
        for m in models
    ]
    names = [m.name for m in models]
    wanted = (query or {}).get("model")
    if wanted in names:
        return options, wanted, f"API {client().base_url}", "api-status"
    value = names[0] if names else None
    if wanted:
        return options, value, f"'{wanted}' is not a vision model of this API; showing {value}.", "notice"
    return options, value, f"API {client().base_url}", "api-status"


@callback(
    Output("vision-run", "data", allow_duplicate=True),
    Output("vision-error", "children", allow_duplicate=True),
    Input("vision-query", "data"),
    prevent_initial_call="initial_duplicate",
)
def reopen_run(query):
    """A link with ``run=ID`` reopens that run (the API recomputes a run it forgot from its input)."""
    run_id = (query or {}).get("run")
    if not run_id:
        return no_update, no_update
    try:
        return RunRecord.from_run(client().run(run_id)).to_store(), ""
    except ApiError as exc:
        return no_update, describe_error(exc, f"Run {run_id} could not be reopened") + " Pick a sample and press Run."


@callback(
    Output("vision-url", "data"),
    Input("vision-run", "data"),
    Input("vision-layer", "value"),
    Input("vision-cell", "data"),
    Input("vision-map-kind", "value"),
    State("vision-model", "value"),
    State("vision-sample", "value"),
    prevent_initial_call=True,
)
def to_address(data, layer, cell, kind, model, sample):
    run = stored_run(data)
    values = {"model": run.model if run else model, "sample": sample, "run": run.id if run else None, "map": kind}
    if run:
        values.update(layer=layer, row=(cell or {}).get("row"), col=(cell or {}).get("col"))
    return query_string(values, PARAMS)


@callback(
    Output("vision-sample", "options"),
    Output("vision-sample", "value"),
    Input("vision-model", "value"),
    State("vision-query", "data"),
)
def load_samples(model, query):
    dataset = dataset_for(model)
    try:
        listing = client().samples(dataset, 0, 200)
    except ApiError as exc:
        return [{"label": str(exc), "value": -1, "disabled": True}], None
    noun = "digit " if dataset == "mnist" else ""
    options = [{"label": f"#{s.index} · {noun}{s.label}", "value": s.index} for s in listing.samples]
    wanted = (query or {}).get("sample")
    return options, wanted if wanted is not None and any(o["value"] == wanted for o in options) else 0


@callback(
    Output("vision-run", "data"),
    Output("vision-error", "children"),
    Input("vision-run-button", "n_clicks"),
    Input("vision-upload", "contents"),
    State("vision-model", "value"),
    State("vision-sample", "value"),
    State("vision-upload", "filename"),
    prevent_initial_call=True,
)
def create_run(_n, contents, model, index, filename):
    if not model:
        return no_update, "Pick a vision model first."
    try:
        if ctx.triggered_id == "vision-upload":
            run = client().upload_image_run(model, decode_upload(contents), filename or "upload.png")
        else:
            run = client().create_sample_run(model, dataset_for(model), int(index or 0))
    except ValueError as exc:
        return no_update, str(exc)
    except ApiError as exc:
        return no_update, describe_error(exc, f"{model} could not run the image")
    return RunRecord.from_run(run).to_store(), ""


@callback(
    Output("vision-cell", "data"),
    Input("vision-image", "clickData"),
    State("vision-run", "data"),
    prevent_initial_call=True,
)
def pick_cell(click, data):
    run = stored_run(data)
    if not click or not run or not run.grid:
        return no_update
    point = click["points"][0]
    row, col = grid_cell(point["x"], point["y"], run.grid)
    return {"row": row, "col": col}


@callback(
    Output("vision-image", "figure"),
    Output("vision-prediction", "children"),
    Output("vision-layer", "options"),
    Output("vision-layer", "value"),
    Input("vision-run", "data"),
    Input("vision-cell", "data"),
    State("vision-layer", "value"),
    State("vision-query", "data"),
)
def render_image(data, cell, layer, query):
    run = stored_run(data)
    if not run or not run.grid:
        return _empty("Pick a digit,<br>press Run,<br>or upload an image.", 380), "", [], None
    grid = run.grid
    cell = grid_cell(cell["col"], cell["row"], grid) if cell else (grid[0] // 2, grid[1] // 2)
    try:
        image = _decode_png(client().run_image(run.id))
    except ApiError as exc:
        return _empty(str(exc), 380), "", [], None
    pred = run.prediction
    truth = f" (label {run.image.label})" if run.image and run.image.label is not None else ""
    if pred is None:  # a record kept by an older dashboard
        text = f"{run.model}{truth}"
    elif pred.probs:
        text = f"{run.model} predicts {pred.predicted} ({max(pred.probs):.1%}){truth}"
    else:  # an encoder without a classifier head (DINOv2): its output is an embedding
        text = f"{run.model}: {pred.dim}-d {pred.kind}{truth}"
    layers = [{"label": f"layer {i}", "value": i} for i in range(run.n_layers)]
    if layer is None:
        layer = (query or {}).get("layer")  # the first run of the page: the address's layer
    layer = layer if layer is not None and layer < run.n_layers else 0
    return image_figure(image, grid, cell, f"query: row {cell[0]}, col {cell[1]}"), text, layers, layer


@callback(
    Output("query-pixel-view", "figure"),
    Input("vision-run", "data"),
    Input("vision-cell", "data"),
    Input("vision-layer", "value"),
    Input("vision-map-kind", "value"),
)
def render_query_pixel_view(data, cell, layer, kind):
    """Every head's row of the query cell at ``layer``, of the map kind asked (the run's value-weighted
    maps as the API serves them, or the weights with the API's reason when it has none)."""
    run = stored_run(data)
    if not run or not run.grid or layer is None:
        return _empty("The query-pixel view appears after a run.")
    grid = run.grid
    cell = grid_cell(cell["col"], cell["row"], grid) if cell else (grid[0] // 2, grid[1] // 2)
    try:
        image = _decode_png(client().run_image(run.id))
        shown, note = shown_id(client(), run.id, kind)
        weights = client().attention(shown, layer)
        structure = client().structure(run.model)
    except ApiError as exc:
        return _empty(str(exc))
    gaussians = None
    if structure is not None and tuple(structure.grid) == grid:
        gaussians = [g.model_dump() for g in structure.layers[layer]]
    columns = 4 if weights.shape[0] > 9 else 3
    return query_pixel_figure(image, weights, grid, run.special, cell, layer, gaussians, columns, note)


@callback(
    Output("conv-panel", "hidden"),
    Output("conv-vs-attention", "figure"),
    Input("vision-run", "data"),
    Input("conv-channel", "value"),
)
def render_conv_vs_attention(data, channel):
    run = stored_run(data)
    if not run or not run.model.startswith("conv-attention"):
        return True, _empty("")
    try:
        pair = client().conv_vs_attention(run.id, int(channel or 0))
    except ApiError as exc:
        return False, _empty(str(exc))
    return False, conv_vs_attention_figure(pair.conv, pair.attention, pair.channel, pair.max_abs_diff)


@callback(
    Output("vision-model-grid", "children"),
    Output("vision-map-note", "children"),
    Input("vision-run", "data"),
    Input("vision-map-kind", "value"),
    prevent_initial_call=True,
)
def render_model_view(data, kind):
    """Every layer x head thumbnail of the map kind asked, and the line that says which kind is drawn."""
    run = stored_run(data)
    if not run:
        return no_update, no_update
    n_layers, n_heads = run.n_layers, run.n_heads
    try:
        shown, note = shown_id(client(), run.id, kind)
        layers = [client().attention(shown, layer, encoding="uint8") for layer in range(n_layers)]
    except ApiError as exc:
        return html.Div(str(exc), className="error"), ""
    header = html.Div(
        className="grid-row grid-header",
        children=[html.Span("", className="row-label")]
        + [html.Span(f"H{h}", className="col-label") for h in range(n_heads)],
    )
    rows = [
        html.Div(
            className="grid-row",
            children=[html.Span(f"L{l}", className="row-label")]
            + [
                html.Button(
                    html.Img(src=thumbnail_src(layers[l][h]), alt=f"L{l}H{h}"),
                    n_clicks=0,
                    id={"type": "vision-thumb", "layer": l, "head": h},
                    className="head-thumb",
                    title=f"L{l}H{h}: click to show layer {l}",
                )
                for h in range(n_heads)
            ],
        )
        for l in range(n_layers)
    ]
    return [header] + rows, f"Maps: {note}." if note else "Maps: attention weights."


@callback(
    Output("vision-layer", "value", allow_duplicate=True),
    Input({"type": "vision-thumb", "layer": ALL, "head": ALL}, "n_clicks"),
    prevent_initial_call=True,
)
def pick_layer_from_thumbnail(clicks):
    if not ctx.triggered_id or not any(clicks or []):
        return no_update
    return ctx.triggered_id["layer"]


@callback(Output("run-store", "data", allow_duplicate=True), Input("vision-run", "data"), prevent_initial_call=True)
def share_run(data):
    """The vision run becomes the session's current run, so the Structure page analyses it too."""
    run = stored_run(data)
    return run.to_store() if run else no_update


@callback(Output("vision-rollout", "figure"), Input("vision-run", "data"))
def render_rollout(data):
    run = stored_run(data)
    if not run:
        return _empty("Rollout appears after a run.", 380)
    try:
        roll = client().importance(run.id, "rollout")
        image = _decode_png(client().run_image(run.id))
    except ApiError as exc:
        return _empty(str(exc), 380)
    if not roll.grid or not run.grid:
        return _empty("This run has no image grid.", 380)
    source = "CLS token" if roll.row is not None else "mean over positions"
    return rollout_overlay_figure(image, np.asarray(roll.grid), run.grid, f"Rollout from the {source} · {run.model}")
