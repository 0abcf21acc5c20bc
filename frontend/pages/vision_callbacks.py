"""Callbacks of the vision page (``dash.callback``); all data comes from the API over HTTP."""

from __future__ import annotations

import base64
import io

import numpy as np
import plotly.graph_objects as go
from dash import ALL, Input, Output, State, callback, ctx, html, no_update
from flask import current_app

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.frontend.figures import thumbnail_src
from attnscope.frontend.vision_figures import (
    conv_vs_attention_figure,
    grid_cell,
    image_figure,
    query_pixel_figure,
    rollout_overlay_figure,
)


def client() -> ApiClient:
    return current_app.config["ATTNSCOPE_CLIENT"]


def _empty(message: str, height: int = 320) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(
        xaxis={"visible": False},
        yaxis={"visible": False},
        height=height,
        plot_bgcolor="white",
        annotations=[{"text": message, "showarrow": False, "font": {"size": 14, "color": "#666"}}],
    )
    return fig


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
    Input("url", "pathname"),
)
def load_models(_pathname):
    try:
        models = [m for m in client().models().models if m.modality == "vision"]
    except ApiError as exc:
        return [], None, f"API unavailable: {exc}"
    options = [
        {"label": f"{m.name} · {m.family}" + (f" · {m.accuracy:.1%}" if m.accuracy else ""), "value": m.name}
        for m in models
    ]
    return options, (options[0]["value"] if options else None), f"API {client().base_url}"


@callback(Output("vision-sample", "options"), Output("vision-sample", "value"), Input("vision-model", "value"))
def load_samples(model):
    dataset = dataset_for(model)
    try:
        listing = client().samples(dataset, 0, 200)
    except ApiError as exc:
        return [{"label": str(exc), "value": -1, "disabled": True}], None
    noun = "digit " if dataset == "mnist" else ""
    return [{"label": f"#{s.index} · {noun}{s.label}", "value": s.index} for s in listing.samples], 0


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
        if ctx.triggered_id == "vision-upload" and contents:
            blob = base64.b64decode(contents.split(",", 1)[1])
            run = client().upload_image_run(model, blob, filename or "upload.png")
        else:
            run = client().create_sample_run(model, dataset_for(model), int(index or 0))
    except ApiError as exc:
        return no_update, str(exc)
    return run.model_dump(), ""


@callback(
    Output("vision-cell", "data"),
    Input("vision-image", "clickData"),
    State("vision-run", "data"),
    prevent_initial_call=True,
)
def pick_cell(click, run):
    if not click or not run or not run.get("grid"):
        return no_update
    point = click["points"][0]
    row, col = grid_cell(point["x"], point["y"], tuple(run["grid"]))
    return {"row": row, "col": col}


@callback(
    Output("vision-image", "figure"),
    Output("vision-prediction", "children"),
    Output("vision-layer", "options"),
    Output("vision-layer", "value"),
    Input("vision-run", "data"),
    Input("vision-cell", "data"),
    State("vision-layer", "value"),
)
def render_image(run, cell, layer):
    if not run:
        return _empty("Pick a digit,<br>press Run,<br>or upload an image.", 380), "", [], None
    grid = tuple(run["grid"])
    cell = grid_cell(cell["col"], cell["row"], grid) if cell else (grid[0] // 2, grid[1] // 2)
    try:
        image = _decode_png(client().run_image(run["id"]))
    except ApiError as exc:
        return _empty(str(exc), 380), "", [], None
    pred = run["prediction"]
    source = run.get("image") or {}
    truth = f" (label {source['label']})" if source.get("label") is not None else ""
    if pred.get("probs"):
        text = f"{run['model']} predicts {pred['predicted']} ({max(pred['probs']):.1%}){truth}"
    else:  # an encoder without a classifier head (DINOv2): its output is an embedding
        text = f"{run['model']}: {pred.get('dim')}-d {pred['kind']}{truth}"
    layers = [{"label": f"layer {i}", "value": i} for i in range(run["shape"][0])]
    layer = layer if layer is not None and layer < run["shape"][0] else 0
    return image_figure(image, grid, cell, f"query: row {cell[0]}, col {cell[1]}"), text, layers, layer


@callback(
    Output("query-pixel-view", "figure"),
    Input("vision-run", "data"),
    Input("vision-cell", "data"),
    Input("vision-layer", "value"),
)
def render_query_pixel_view(run, cell, layer):
    if not run or layer is None:
        return _empty("The query-pixel view appears after a run.")
    grid = tuple(run["grid"])
    cell = grid_cell(cell["col"], cell["row"], grid) if cell else (grid[0] // 2, grid[1] // 2)
    try:
        image = _decode_png(client().run_image(run["id"]))
        weights = client().attention(run["id"], layer)
        structure = client().structure(run["model"])
    except ApiError as exc:
        return _empty(str(exc))
    gaussians = None
    if structure is not None and tuple(structure.grid) == grid:
        gaussians = [g.model_dump() for g in structure.layers[layer]]
    columns = 4 if weights.shape[0] > 9 else 3
    return query_pixel_figure(image, weights, grid, run["special"], cell, layer, gaussians, columns)


@callback(
    Output("conv-panel", "hidden"),
    Output("conv-vs-attention", "figure"),
    Input("vision-run", "data"),
    Input("conv-channel", "value"),
)
def render_conv_vs_attention(run, channel):
    if not run or not run["model"].startswith("conv-attention"):
        return True, _empty("")
    try:
        pair = client().conv_vs_attention(run["id"], int(channel or 0))
    except ApiError as exc:
        return False, _empty(str(exc))
    return False, conv_vs_attention_figure(pair.conv, pair.attention, pair.channel, pair.max_abs_diff)


@callback(Output("vision-model-grid", "children"), Input("vision-run", "data"), prevent_initial_call=True)
def render_model_view(run):
    if not run:
        return no_update
    n_layers, n_heads = run["shape"][0], run["shape"][1]
    try:
        layers = [client().attention(run["id"], layer, encoding="uint8") for layer in range(n_layers)]
    except ApiError as exc:
        return html.Div(str(exc), className="error")
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
    return [header] + rows


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
def share_run(run):
    """The vision run becomes the session's current run, so the Structure page analyses it too."""
    return run or no_update


@callback(Output("vision-rollout", "figure"), Input("vision-run", "data"))
def render_rollout(run):
    if not run:
        return _empty("Rollout appears after a run.", 380)
    try:
        roll = client().importance(run["id"], "rollout")
        image = _decode_png(client().run_image(run["id"]))
    except ApiError as exc:
        return _empty(str(exc), 380)
    if not roll.grid:
        return _empty("This run has no image grid.", 380)
    source = "CLS token" if roll.row is not None else "mean over positions"
    return rollout_overlay_figure(
        image, np.asarray(roll.grid), tuple(run["grid"]), f"Rollout from the {source} · {run['model']}"
    )
