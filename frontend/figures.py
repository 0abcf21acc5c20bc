"""Pure figure builders: arrays in, ``go.Figure`` or image data out. No HTTP, no Dash state."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative, sample_colorscale

from attnscope.frontend.plot_config import SEQUENTIAL, scale_map, scaling_title
from attnscope.frontend.token_labels import calm_token, calm_tokens

COLORSCALE = SEQUENTIAL  # one colour-scale policy across pages (plot_config)
_LUT = np.array(
    [[int(float(c)) for c in rgb[4:-1].split(",")] for rgb in sample_colorscale(COLORSCALE, np.linspace(0, 1, 256))],
    dtype=np.uint8,
)  # [256, 3]
HIDDEN_RGB = (214, 218, 225)  # cells not drawn (hidden keys): grey
HEAD_COLORS = qualitative.Plotly + qualitative.D3 + qualitative.Set3
LABELS_PER_SIDE = 256  # the head view's token labels a side beyond 512 tokens


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
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rgb.reshape(h, -1)], axis=1).tobytes()  # filter 0 a row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 1))  # level 1: half the time of 6, 1 % larger
        + chunk(b"IEND", b"")
    )


def thumbnail_src(matrix: np.ndarray, max_size: int = 64) -> str:
    """A head's ``[query, key]`` map as a PNG data URI, scaled to its own maximum."""
    small = downsample(np.asarray(matrix, dtype=np.float32), max_size)
    top = float(np.nanmax(small)) if small.size else 0.0
    idx = np.clip(np.nan_to_num(small / top if top > 0 else small) * 255, 0, 255).astype(np.uint8)
    rgb = _LUT[idx].copy()
    rgb[np.isnan(small)] = HIDDEN_RGB  # hidden keys (sink_hiding): grey, not "weight 0"
    return "data:image/png;base64," + base64.b64encode(_png(rgb)).decode()


DETAIL_CELLS = 256  # the head detail shows at most this many cells per side (pooled beyond)


def detail_stride(rows: tuple[int, int], cols: tuple[int, int], cells: int = DETAIL_CELLS) -> int:
    """The pooling stride that fits the window ``rows`` x ``cols`` into ``cells`` per side (1: full
    resolution)."""
    return max(1, -(-max(rows[1] - rows[0], cols[1] - cols[0]) // cells))


def head_detail_figure(
    weights: np.ndarray,
    tokens: list[str],
    title: str,
    rows: tuple[int, int] | None = None,
    cols: tuple[int, int] | None = None,
    stride: int = 1,
    scaling: str = "global",
) -> go.Figure:
    """Heatmap of one head's ``[query, key]`` window: ``weights`` ``[ceil(R / stride), ceil(C /
    stride)]`` covering query positions ``rows`` and key positions ``cols`` (default: all), each cell
    the pool of a ``stride x stride`` block. Axes are token positions (zooming selects a token
    window), labelled with the tokens. The weights travel as one binary array; the hover shows
    positions and weight, and the explore page names the tokens client-side
    (``assets/attention_views.js``), so no per-cell text is sent. ``scaling``: ``global``, ``row``
    or ``log`` colours (``plot_config.scale_map``); the hover and colour bar name the scaled value."""
    n = len(tokens)
    rows = (0, n) if rows is None else rows
    cols = (0, n) if cols is None else cols
    z, colors = scale_map(np.asarray(weights, dtype=np.float32), scaling)
    z = z.astype(np.float32)
    half = (stride - 1) / 2
    value = scaling_title(scaling)
    what = f"max {value}" if stride > 1 else value
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x0=cols[0] + half,
            dx=stride,
            y0=rows[0] + half,
            dy=stride,
            **colors,
            colorbar={"title": {"text": what}},
            hovertemplate=f"query %{{y}} · key %{{x}}<br>{what} %{{z:.5f}}<extra></extra>"
            if stride == 1
            else f"queries %{{y}} ± {half:g} · keys %{{x}} ± {half:g}<br>{what} %{{z:.5f}}<extra></extra>",
        )
    )
    span = max(rows[1] - rows[0], cols[1] - cols[0])
    # every token labelled up to 64 positions; beyond that every k-th, and the figure stops growing at 900 px
    step = 1 if span <= 64 else -(-span // 48)

    def axis(lo: int, hi: int) -> dict:
        ticks = list(range(lo, hi, step))
        return {
            "tickmode": "array",
            "tickvals": ticks,
            "ticktext": [calm_token(tokens[i]) for i in ticks],
            "showgrid": False,
            "range": [lo - 0.5, hi - 0.5],
            # Plotly's default ("hide past div") measures every label's box on each draw: half of a click's
            # drawing time at 128 tokens; the margins already hold the labels
            "ticklabeloverflow": "allow",
        }

    fig.update_layout(
        title={"text": title},
        height=min(900, max(420, 18 * span + 140)),
        margin={"l": 90, "r": 20, "t": 50, "b": 90},
        xaxis={**axis(*cols), "title": {"text": "key (attended to)"}, "tickangle": -60, "side": "bottom"},
        yaxis={
            **axis(*rows),
            "range": [rows[1] - 0.5, rows[0] - 0.5],
            "title": {"text": "query (attending)"},
            "scaleanchor": "x",
        },
        plot_bgcolor="white",
        meta={
            "stride": stride,
            "rows": list(rows),
            "cols": list(cols),
            "value": value,
            # one token label per row / column of z: the CSV export's headers (assets/attnscope.js)
            "labels": {"x": block_labels(tokens, *cols, stride), "y": block_labels(tokens, *rows, stride)},
        },
    )
    return fig


def block_labels(tokens: list[str], lo: int, hi: int, stride: int = 1) -> list[str]:
    """One label per pooled block of positions ``lo..hi`` (``stride`` positions each): ``"cat (2)"``,
    or ``"the … mat (4-7)"`` for a block, as the hover names them."""
    out = []
    for p in range(lo, hi, stride):
        q = min(p + stride, hi) - 1
        out.append(f"{tokens[p]} ({p})" if q == p else f"{tokens[p]} … {tokens[q]} ({p}-{q})")
    return out


def window_from_relayout(relayout: dict | None, n: int, current: dict | None = None) -> dict | None:
    """The token window ``{"rows": [a, b], "cols": [c, d]}`` a zoom on the head detail asks for
    (``relayoutData`` of the graph), clipped to ``0..n``; ``{}`` for a reset (double click or
    autorange); None when the event is no zoom."""
    if not relayout:
        return None
    if relayout.get("xaxis.autorange") or relayout.get("yaxis.autorange"):
        return {}
    out = dict(current or {})
    for axis, key in (("xaxis", "cols"), ("yaxis", "rows")):
        lo, hi = relayout.get(f"{axis}.range[0]"), relayout.get(f"{axis}.range[1]")
        if lo is None or hi is None:
            continue
        a, b = sorted((float(lo), float(hi)))
        start = int(np.clip(np.ceil(a - 0.5), 0, n - 1))
        stop = int(np.clip(np.ceil(b + 0.5), start + 1, n))
        out[key] = [start, stop]
    return out if out != (current or {}) else None


def head_view_figure(
    indices: np.ndarray,
    weights: np.ndarray,
    tokens: list[str],
    heads: list[int],
    layer: int,
    min_weight: float = 0.1,
    note: str = "",
) -> go.Figure:
    """BertViz-style head view of one layer from each row's top-k keys: ``indices`` and ``weights``
    ``[head, query, k]`` (``format=topk`` of the API). A line from each query token (left) to each of
    its top keys (right) with weight ``>= min_weight``, width and opacity by weight, one colour per
    head. Reading top-k rows keeps a 4,096-token layer to ``head x 4096 x k`` numbers. ``note``: a
    line under the title (what is hidden)."""
    indices = np.asarray(indices)
    weights = np.asarray(weights, dtype=np.float32)
    n = len(tokens)
    fig = go.Figure()
    bins = [(min_weight, 0.25, 1.0, 0.25), (0.25, 0.5, 2.5, 0.45), (0.5, 0.75, 4.0, 0.65), (0.75, 1.01, 6.0, 0.85)]
    # the lines are layout shapes, one SVG path per head and weight bin ("M0,q L1,k" per line, y down):
    # a scatter trace with gaps draws one path element per line, 100,000 of them at 4,096 tokens (seconds
    # of main-thread work for every redraw, a resize included)
    shapes = []
    for h in heads:
        w, idx = weights[h], indices[h]
        color = HEAD_COLORS[h % len(HEAD_COLORS)]
        for lo, hi, width, opacity in bins:
            qs, slots = np.nonzero((w >= lo) & (w < hi))
            if qs.size:
                ks = idx[qs, slots]
                path = "".join(f"M0,{q}L1,{k}" for q, k in zip(qs.tolist(), ks.tolist()))
                shapes.append(
                    {
                        "type": "path",
                        "path": path,
                        "xref": "x",
                        "yref": "y",
                        "line": {"width": width, "color": color},
                        "opacity": opacity,
                        "layer": "below",
                        "legendgroup": f"h{h}",
                        "name": f"head {h}",
                    }
                )
        fig.add_trace(  # the head's legend entry
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
    # 22 px per token up to 100 tokens, then denser (9 px and small labels at 512 tokens); beyond 512
    # tokens the figure stops growing (about 4,700 px) and labels every k-th token, at most
    # LABELS_PER_SIDE a side (18 px apart): each label is a text point that Plotly measures on every draw,
    # two thirds of a 4,096-token head view's drawing time with 512 a side
    row_px = 22 if n <= 100 else max(9, 2200 // n) if n <= 512 else 4608 / n
    label_step = 1 if n <= 512 else -(-n // LABELS_PER_SIDE)
    shown = list(range(0, n, label_step))
    ys = shown
    for x, anchor in ((0.0, "left"), (1.0, "right")):
        fig.add_trace(
            go.Scatter(
                x=[x] * len(shown),
                y=ys,
                mode="text",
                text=calm_tokens([tokens[i] for i in shown]),
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
        title={"text": f"Head view · layer {layer}" + (f"<br><sub>{note}</sub>" if note else "")},
        height=int(max(360, row_px * n + 120)) + legend_px,
        xaxis={"visible": False, "range": [-0.6, 1.6]},
        yaxis={"visible": False, "range": [(n - 1) + 0.6, -0.6]},  # token 0 at the top
        margin={"l": 10, "r": 10, "t": 50, "b": 14 + legend_px},
        plot_bgcolor="white",
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
        shapes=shapes,
    )
    return fig
