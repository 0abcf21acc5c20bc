"""Pure figure builders: arrays in, ``go.Figure`` or image data out. No HTTP, no Dash state."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative, sample_colorscale

from attnscope.frontend.plot_config import SEQUENTIAL, scale_map, scaling_title

COLORSCALE = SEQUENTIAL  # one colour-scale policy across pages (plot_config)
_LUT = np.array(
    [[int(float(c)) for c in rgb[4:-1].split(",")] for rgb in sample_colorscale(COLORSCALE, np.linspace(0, 1, 256))],
    dtype=np.uint8,
)  # [256, 3]
HEAD_COLORS = qualitative.Plotly + qualitative.D3 + qualitative.Set3


def downsample(matrix: np.ndarray, max_size: int = 64) -> np.ndarray:
    """Block-mean ``[query, key]`` down to at most ``max_size`` per side (long inputs, thumbnails)."""
    n_q, n_k = matrix.shape
    fq, fk = -(-n_q // max_size), -(-n_k // max_size)
    if fq == 1 and fk == 1:
        return matrix
    pq, pk = (-n_q) % fq, (-n_k) % fk
    padded = np.pad(matrix, ((0, pq), (0, pk)), constant_values=np.nan)
    blocks = padded.reshape(padded.shape[0] // fq, fq, padded.shape[1] // fk, fk)
    return np.nanmean(blocks, axis=(1, 3))


def _png(rgb: np.ndarray) -> bytes:
    """Minimal PNG (8-bit RGB, no filter) of an ``[h, w, 3]`` uint8 image."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[i].tobytes() for i in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


def thumbnail_src(matrix: np.ndarray, max_size: int = 64) -> str:
    """A head's ``[query, key]`` map as a PNG data URI, scaled to its own maximum."""
    small = downsample(np.asarray(matrix, dtype=np.float32), max_size)
    top = float(np.nanmax(small)) if small.size else 0.0
    idx = np.clip(np.nan_to_num(small / top if top > 0 else small) * 255, 0, 255).astype(np.uint8)
    return "data:image/png;base64," + base64.b64encode(_png(_LUT[idx])).decode()


def head_detail_figure(weights: np.ndarray, tokens: list[str], title: str, scaling: str = "global") -> go.Figure:
    """Heatmap of one head ``[query, key]``: token labels on both axes, exact weights on hover.
    ``scaling``: ``global`` (the weights, 0..max), ``row`` or ``log`` (``plot_config.scale_map``;
    the hover names the scaled value)."""
    n = len(tokens)
    idx = list(range(n))
    hover = [[f"{tokens[q]} → {tokens[k]}" for k in idx] for q in idx]
    z, colors = (weights, {"colorscale": COLORSCALE, "zmin": 0}) if scaling == "global" else scale_map(weights, scaling)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=idx,
            y=idx,
            customdata=hover,
            **colors,
            colorbar={"title": {"text": scaling_title(scaling)}},
            hovertemplate="query %{y} · key %{x}<br>%{customdata}<br>"
            + scaling_title(scaling)
            + " %{z:.5f}<extra></extra>",
        )
    )
    # every token labelled up to 64 tokens; beyond that every k-th (hover still names each cell), and
    # the figure stops growing at 900 px (a 512-token map was 9,000 px tall)
    step = 1 if n <= 64 else -(-n // 48)
    ticks = idx[::step]
    axis = {"tickmode": "array", "tickvals": ticks, "ticktext": [tokens[i] for i in ticks], "showgrid": False}
    fig.update_layout(
        title={"text": title},
        height=min(900, max(420, 18 * n + 140)),
        margin={"l": 90, "r": 20, "t": 50, "b": 90},
        xaxis={**axis, "title": {"text": "key (attended to)"}, "tickangle": -60, "side": "bottom"},
        yaxis={**axis, "title": {"text": "query (attending)"}, "autorange": "reversed", "scaleanchor": "x"},
        plot_bgcolor="white",
    )
    return fig


def head_view_figure(
    layer_weights: np.ndarray, tokens: list[str], heads: list[int], layer: int, min_weight: float = 0.1
) -> go.Figure:
    """BertViz-style head view of one layer ``[head, query, key]``: a line from each query token
    (left) to each key token (right) it attends to, width and opacity by weight, one colour per head."""
    n = len(tokens)
    fig = go.Figure()
    bins = [(min_weight, 0.25, 1.0, 0.25), (0.25, 0.5, 2.5, 0.45), (0.5, 0.75, 4.0, 0.65), (0.75, 1.01, 6.0, 0.85)]
    for h in heads:
        w = layer_weights[h]
        color = HEAD_COLORS[h % len(HEAD_COLORS)]
        for lo, hi, width, opacity in bins:
            qs, ks = np.nonzero((w >= lo) & (w < hi))
            if qs.size == 0:
                continue
            xs = np.tile([0.0, 1.0, np.nan], qs.size)
            ys = np.column_stack([-qs, -ks, np.full(qs.size, np.nan)]).ravel()
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    line={"width": width, "color": color},
                    opacity=opacity,
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=f"h{h}",
                )
            )
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                line={"color": color, "width": 4},
                name=f"head {h}",
                legendgroup=f"h{h}",
                showlegend=True,
            )
        )
    ys = [-i for i in range(n)]
    # 22 px per token up to 100 tokens, then denser (9 px and small labels at 512 tokens)
    row_px = 22 if n <= 100 else max(9, 2200 // n)
    for x, anchor in ((0.0, "left"), (1.0, "right")):
        fig.add_trace(
            go.Scatter(
                x=[x] * n,
                y=ys,
                mode="text",
                text=tokens,
                textposition=f"middle {anchor}",
                hovertemplate="%{text}<extra></extra>",
                showlegend=False,
                textfont={"size": 13 if n <= 100 else 8},
            )
        )
    # the legend sits in its own strip at the bottom of the figure (container coordinates), below the
    # plot area: it never covers the last tokens; room for 4 heads a row (a 390 px screen)
    legend_px = 24 * -(-len(heads) // 4)
    fig.update_layout(
        title={"text": f"Head view · layer {layer}"},
        height=max(360, row_px * n + 120) + legend_px,
        xaxis={"visible": False, "range": [-0.6, 1.6]},
        yaxis={"visible": False, "range": [-(n - 1) - 0.6, 0.6]},
        margin={"l": 10, "r": 10, "t": 50, "b": 14 + legend_px},
        plot_bgcolor="white",
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
    )
    return fig
