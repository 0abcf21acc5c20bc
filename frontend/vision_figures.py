"""Pure figure builders of the vision page: arrays in, ``go.Figure`` out (no HTTP, no Dash state).

Coordinates are grid units: grid cell ``(row, col)`` is centred on ``(x=col, y=row)``; the image
(``[height, width]`` or ``[height, width, 3]``) is stretched over the same extent, so a click on the
picture names a grid cell and attention maps line up with the pixels they cover.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attnscope.frontend.figures import HEAD_COLORS
from attnscope.frontend.plot_config import diverging_range

ATTENTION_SCALE = [[0.0, "rgba(255,69,0,0)"], [0.15, "rgba(255,69,0,0.35)"], [1.0, "rgba(255,215,0,0.95)"]]


def grid_cell(x: float, y: float, grid: tuple[int, int]) -> tuple[int, int]:
    """A click at grid coordinates ``(x, y)`` -> the cell ``(row, col)`` it falls in (clipped)."""
    rows, cols = grid
    return int(min(max(round(y), 0), rows - 1)), int(min(max(round(x), 0), cols - 1))


def query_index(cell: tuple[int, int], grid: tuple[int, int], special: list[int]) -> int:
    """Position of grid cell ``(row, col)`` among all tokens (special tokens such as CLS come first)."""
    flat = cell[0] * grid[1] + cell[1]
    positions = [i for i in range(grid[0] * grid[1] + len(special)) if i not in set(special)]
    return positions[flat]


def attention_on_grid(layer_weights: np.ndarray, query: int, grid: tuple[int, int], special: list[int]) -> np.ndarray:
    """One layer ``[head, query, key]`` -> each head's weights of ``query`` over the grid ``[head, rows, cols]``
    (special keys such as CLS left out; their weight is reported separately by ``special_mass``)."""
    keep = [i for i in range(layer_weights.shape[-1]) if i not in set(special)]
    return layer_weights[:, query, keep].reshape(layer_weights.shape[0], *grid)


def special_mass(layer_weights: np.ndarray, query: int, special: list[int]) -> np.ndarray:
    """Weight each head gives the special tokens ``[head]``."""
    if not special:
        return np.zeros(layer_weights.shape[0], np.float32)
    return layer_weights[:, query, special].sum(-1)


def _image_rgb(image: np.ndarray) -> np.ndarray:
    img = np.asarray(image, dtype=np.uint8)
    return np.repeat(img[:, :, None], 3, axis=2) if img.ndim == 2 else img


def _image_trace(image: np.ndarray, grid: tuple[int, int]) -> go.Image:
    rgb = _image_rgb(image)
    h, w = rgb.shape[:2]
    dy, dx = grid[0] / h, grid[1] / w
    return go.Image(z=rgb, x0=-0.5 + dx / 2, dx=dx, y0=-0.5 + dy / 2, dy=dy, hoverinfo="skip")


def ellipse(
    center: tuple[float, float], cov: np.ndarray, n_std: float = 1.0, points: int = 60
) -> tuple[np.ndarray, np.ndarray]:
    """Points ``(x, y)`` of the ``n_std`` ellipse of a 2-D Gaussian given as (row, col) centre/covariance."""
    vals, vecs = np.linalg.eigh(np.asarray(cov, dtype=np.float64))
    t = np.linspace(0, 2 * np.pi, points)
    circle = np.stack([np.cos(t), np.sin(t)])  # (2, P)
    pts = vecs @ (np.sqrt(np.maximum(vals, 0))[:, None] * circle) * n_std  # (row, col) offsets
    return center[1] + pts[1], center[0] + pts[0]


def image_figure(image: np.ndarray, grid: tuple[int, int], cell: tuple[int, int] | None, title: str = "") -> go.Figure:
    """The clickable picture: the image on grid coordinates, the query cell marked."""
    fig = go.Figure(_image_trace(image, grid))
    rows, cols = grid
    # an invisible heatmap catches clicks on every cell (go.Image clicks carry pixel, not grid, coordinates)
    fig.add_trace(
        go.Heatmap(
            z=np.zeros(grid),
            x=list(range(cols)),
            y=list(range(rows)),
            opacity=0,
            showscale=False,
            hovertemplate="row %{y} · col %{x}<extra>click: query</extra>",
        )
    )
    if cell is not None:
        fig.add_trace(
            go.Scatter(
                x=[cell[1]],
                y=[cell[0]],
                mode="markers",
                showlegend=False,
                hoverinfo="skip",
                marker={"symbol": "square-open", "size": 14, "color": "cyan", "line": {"width": 3}},
            )
        )
    fig.update_layout(
        title={"text": title},
        height=380,
        width=380,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={"visible": False, "range": [-0.5, cols - 0.5]},
        yaxis={"visible": False, "range": [rows - 0.5, -0.5], "scaleanchor": "x"},
    )
    return fig


def query_pixel_figure(
    image: np.ndarray,
    layer_weights: np.ndarray,
    grid: tuple[int, int],
    special: list[int],
    cell: tuple[int, int],
    layer: int,
    gaussians: list[dict] | None = None,
    columns: int = 3,
    note: str = "",
) -> go.Figure:
    """Cordonnier's figure: for the query cell, every head's attention over the grid overlaid on the
    image, one panel per head. ``gaussians`` (per head ``{"center": [dr, dc], "cov": 2x2}``) adds each
    head's learned centre (a cross) and 1- and 2-sigma ellipses around ``query + centre``; ``note``
    (the map kind when it is not the weights) goes under the title and names the hover's value."""
    n_heads = layer_weights.shape[0]
    value = "value-weighted" if note else "weight"
    q = query_index(cell, grid, special)
    maps = attention_on_grid(layer_weights, q, grid, special)
    extra = special_mass(layer_weights, q, special)
    columns = min(columns, n_heads)
    n_rows = math.ceil(n_heads / columns)
    titles = [f"L{layer}H{h}" + (f" · CLS {extra[h]:.2f}" if special else "") for h in range(n_heads)]
    fig = make_subplots(
        rows=n_rows, cols=columns, subplot_titles=titles, horizontal_spacing=0.02, vertical_spacing=0.06
    )
    rows, cols = grid
    for h in range(n_heads):
        r, c = h // columns + 1, h % columns + 1
        fig.add_trace(_image_trace(image, grid), row=r, col=c)
        top = float(maps[h].max()) or 1.0
        fig.add_trace(
            go.Heatmap(
                z=maps[h],
                x=list(range(cols)),
                y=list(range(rows)),
                zmin=0,
                zmax=top,
                colorscale=ATTENTION_SCALE,
                showscale=False,
                name=f"H{h}",
                hovertemplate=f"H{h} · row %{{y}} col %{{x}}<br>{value} %{{z:.4f}}<extra></extra>",
            ),
            row=r,
            col=c,
        )
        fig.add_trace(
            go.Scatter(
                x=[cell[1]],
                y=[cell[0]],
                mode="markers",
                showlegend=False,
                hoverinfo="skip",
                marker={"symbol": "square-open", "size": 9, "color": "cyan", "line": {"width": 2}},
            ),
            row=r,
            col=c,
        )
        if gaussians is not None:
            g = gaussians[h]
            centre = (cell[0] + g["center"][0], cell[1] + g["center"][1])
            color = HEAD_COLORS[h % len(HEAD_COLORS)]
            for n_std, dash in ((1.0, "solid"), (2.0, "dot")):
                ex, ey = ellipse(centre, np.asarray(g["cov"]), n_std)
                fig.add_trace(
                    go.Scatter(
                        x=ex,
                        y=ey,
                        mode="lines",
                        showlegend=False,
                        hoverinfo="skip",
                        line={"color": color, "width": 2, "dash": dash},
                    ),
                    row=r,
                    col=c,
                )
            fig.add_trace(
                go.Scatter(
                    x=[centre[1]],
                    y=[centre[0]],
                    mode="markers",
                    showlegend=False,
                    marker={"symbol": "x", "size": 9, "color": color},
                    hovertemplate=f"H{h} centre: query + ({g['center'][0]:.2f}, {g['center'][1]:.2f})<extra></extra>",
                ),
                row=r,
                col=c,
            )
    fig.update_xaxes(visible=False, range=[-0.5, cols - 0.5])
    fig.update_yaxes(visible=False, range=[rows - 0.5, -0.5])
    for i in range(1, n_heads + 1):
        fig.update_yaxes(scaleanchor=f"x{'' if i == 1 else i}", row=(i - 1) // columns + 1, col=(i - 1) % columns + 1)
    fig.update_layout(
        title={
            "text": f"Query pixel (row {cell[0]}, col {cell[1]}) · layer {layer}"
            + (f"<br><sub>{note}</sub>" if note else "")
        },
        height=260 * n_rows + 60,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        showlegend=False,
        plot_bgcolor="white",
    )
    return fig


def conv_vs_attention_figure(conv: np.ndarray, attention: np.ndarray, channel: int, max_abs_diff: float) -> go.Figure:
    """One first-layer channel computed by the convolution and by the attention layer built from it,
    side by side on one colour scale (Cordonnier's theorem made visible)."""
    conv, attention = np.asarray(conv, dtype=np.float32), np.asarray(attention, dtype=np.float32)
    lo, hi = float(min(conv.min(), attention.min())), float(max(conv.max(), attention.max()))
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=["3x3 convolution", "9-head attention built from it"], horizontal_spacing=0.06
    )
    for i, z in enumerate((conv, attention)):
        fig.add_trace(
            go.Heatmap(
                z=z,
                **diverging_range([lo, hi]),
                showscale=i == 1,
                hovertemplate="row %{y} · col %{x}<br>%{z:.5f}<extra></extra>",
            ),
            row=1,
            col=i + 1,
        )
    fig.update_yaxes(autorange="reversed", scaleanchor="x")
    fig.update_yaxes(autorange="reversed", scaleanchor="x2", row=1, col=2)
    fig.update_layout(
        title={"text": f"channel {channel} · max |conv − attention| = {max_abs_diff:.1e}"},
        height=360,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        plot_bgcolor="white",
    )
    return fig


def rollout_overlay_figure(image: np.ndarray, values: np.ndarray, grid: tuple[int, int], title: str) -> go.Figure:
    """The image with a rollout importance map ``[rows, cols]`` drawn over it, semi-transparent."""
    fig = go.Figure(_image_trace(image, grid))
    fig.add_trace(
        go.Heatmap(
            z=np.asarray(values, dtype=float),
            colorscale="Inferno",
            opacity=0.55,
            colorbar={"title": {"text": "rollout"}},
            hovertemplate="row %{y} col %{x}<br>importance %{z:.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": title, "font": {"size": 13}},
        height=380,
        margin={"l": 20, "r": 20, "t": 50, "b": 20},
        xaxis={"visible": False, "range": [-0.5, grid[1] - 0.5]},
        yaxis={"visible": False, "autorange": "reversed", "scaleanchor": "x"},
    )
    return fig
