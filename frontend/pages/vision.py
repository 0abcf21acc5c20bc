"""Vision: pick a digit (or upload an image), click a pixel, see every head's attention over the grid."""

import dash
from dash import dcc, html

from attnscope.frontend.page_common import control, model_picker, panel
from attnscope.frontend.pages import vision_callbacks  # noqa: F401  (registers this page's callbacks)
from attnscope.frontend.pages.vision_callbacks import PARAMS
from attnscope.frontend.plot_config import bare_graph
from attnscope.frontend.url_state import address_parts, parse_query
from attnscope.frontend.writes_layout import map_kind_control

dash.register_page(__name__, path="/vision", name="Vision", order=1, title="attnscope · vision")


def layout(**query) -> html.Div:
    state, problems = parse_query(query, PARAMS)
    cell = {"row": state["row"], "col": state["col"]} if state["row"] is not None and state["col"] is not None else None
    return html.Div(
        children=[
            dcc.Store(id="vision-run"),
            dcc.Store(id="vision-cell", data=cell or {"row": 7, "col": 7}),
            *address_parts("vision", state, problems),
            html.Div(
                className="controls",
                children=[
                    model_picker("vision-model", "Vision model"),
                    control(
                        "Sample (held-out MNIST digit, or a photo for DINOv2)",
                        dcc.Dropdown(id="vision-sample", clearable=False, placeholder="loading samples…"),
                    ),
                    html.Button("Run", id="vision-run-button", n_clicks=0, className="run-button"),
                    html.Div(
                        title="upload an image (PNG or JPEG)",
                        children=dcc.Upload(
                            id="vision-upload",
                            className="upload",
                            accept="image/png,image/jpeg",
                            children=html.Div(["or drop / ", html.A("choose an image"), " (PNG or JPEG)"]),
                        ),
                    ),
                    map_kind_control(state["map"], "vision-map-kind"),
                    html.Div(id="vision-map-note", className="hint", role="status"),
                    html.Div(id="vision-error", className="error", role="alert"),
                    html.Div(id="vision-status", className="api-status"),
                ],
            ),
            html.Div(
                className="row",
                children=[
                    panel(
                        "Image",
                        "Click a pixel: it becomes the query.",
                        bare_graph("vision-image"),
                        html.Div(id="vision-prediction", className="prediction"),
                        html.Div(
                            className="inline",
                            children=[
                                html.Label("Layer", htmlFor="vision-layer"),
                                dcc.Dropdown(id="vision-layer", clearable=False, className="small-dropdown"),
                            ],
                        ),
                    ),
                    html.Section(
                        className="panel grow",
                        children=[
                            html.H2("Query-pixel view"),
                            html.P(
                                "Each head's attention from the query pixel, over the image (brighter = more weight; "
                                "with Map value-weighted, more of what the key adds, ‖a_ij W_O v_j‖). "
                                "Gaussian heads also show their learned centre (x) and 1σ/2σ spread.",
                                className="hint",
                            ),
                            bare_graph("query-pixel-view"),
                        ],
                    ),
                ],
            ),
            panel(
                "Model view",
                (
                    "Every layer x head of the run as a [query, key] map (positions in row-major grid order), each "
                    "scaled to its own maximum. Click one to show its layer above."
                ),
                dcc.Loading(html.Div(id="vision-model-grid", className="model-grid"), type="dot"),
            ),
            html.Section(
                id="conv-panel",
                className="panel",
                hidden=True,
                children=[
                    html.H2("Convolution vs attention"),
                    html.P(
                        "conv-attention serves its first 3x3 convolution as the 9-head attention layer built from the "
                        "kernel (each head hard-attends to one tap's shift). The same output channel, both ways:",
                        className="hint",
                    ),
                    html.Div(
                        className="inline",
                        children=[
                            html.Label("Channel", htmlFor="conv-channel"),
                            dcc.Dropdown(
                                id="conv-channel",
                                clearable=False,
                                value=0,
                                className="small-dropdown",
                                options=[{"label": f"channel {c}", "value": c} for c in range(16)],
                            ),
                        ],
                    ),
                    bare_graph("conv-vs-attention", loading=False),
                ],
            ),
            panel(
                "Rollout over the image",
                (
                    "Attention rollout (Abnar & Zuidema: heads averaged, residual added, multiplied down the "
                    "layers) from the CLS token, or averaged over every position for models without one, drawn "
                    "over the image. The Structure page analyses this run too."
                ),
                bare_graph("vision-rollout"),
            ),
        ]
    )
