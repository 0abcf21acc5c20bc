"""Pure builders of the compare page: the A - B thumbnails (diverging, one symmetric scale for the
whole grid), the per-head Jensen-Shannon grid, and a difference map. No HTTP, no Dash state."""

from __future__ import annotations

import base64

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from attnscope.frontend.figures import _png, downsample
from attnscope.frontend.plot_config import DIVERGING, SEQUENTIAL, diverging_range
from attnscope.frontend.token_labels import token_ticks

_DIV_LUT = np.array(
    [[int(float(c)) for c in rgb[4:-1].split(",")] for rgb in sample_colorscale(DIVERGING, np.linspace(0, 1, 256))],
    dtype=np.uint8,
)  # [256, 3]: index 0 = -scale (blue), 128 ~ 0 (white), 255 = +scale (red)


def diff_thumbnail_src(diff: np.ndarray, scale: float, max_size: int = 64) -> str:
    """``A - B`` of one head ``[query, key]`` as a PNG data URI on the diverging scale ``[-scale, scale]``
    (the same ``scale`` for every head of a grid, so thumbnails compare)."""
    small = downsample(np.asarray(diff, dtype=np.float32), max_size)
    scale = scale if scale > 0 else 1e-12
    idx = np.clip(np.round((np.nan_to_num(small) / scale + 1) * 127.5), 0, 255).astype(np.uint8)
    return "data:image/png;base64," + base64.b64encode(_png(_DIV_LUT[idx])).decode()


def js_grid_figure(js, title: str = "Jensen-Shannon divergence per head (bits)") -> go.Figure:
    """``[layer][head]`` JS divergences as a heatmap (sequential, 0 .. max); click a cell for its head."""
    arr = np.asarray(js, dtype=float)
    n_layers, n_heads = arr.shape
    fig = go.Figure(
        go.Heatmap(
            z=arr,
            x=[f"H{h}" for h in range(n_heads)],
            y=[f"L{l}" for l in range(n_layers)],
            colorscale=SEQUENTIAL,
            zmin=0,
            zmax=float(arr.max()) if arr.size and arr.max() > 0 else 1.0,
            colorbar={"title": {"text": "JS (bits)"}},
            hovertemplate="%{y}%{x}: JS %{z:.4f} bits<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        height=120 + 34 * n_layers,
        margin={"l": 50, "r": 10, "t": 50, "b": 40},
        yaxis={"autorange": "reversed"},
        plot_bgcolor="white",
    )
    return fig


def diff_map_figure(diff: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """One head's ``A - B`` ``[query, key]``: diverging, symmetric around 0."""
    n = len(tokens)
    idx = list(range(n))
    fig = go.Figure(
        go.Heatmap(
            z=diff,
            x=idx,
            y=idx,
            **diverging_range(diff),
            colorbar={"title": {"text": "A − B"}},
            hovertemplate="query %{y} · key %{x}<br>A − B %{z:+.4f}<extra></extra>",
        )
    )
    axis = {**token_ticks(tokens), "showgrid": False}
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        height=min(700, max(360, 16 * n + 140)),
        margin={"l": 80, "r": 10, "t": 50, "b": 80},
        xaxis={**axis, "tickangle": -60},
        yaxis={**axis, "autorange": "reversed", "scaleanchor": "x"},
        plot_bgcolor="white",
    )
    return fig


def restrict_map(weights: np.ndarray, positions: list[int] | None) -> np.ndarray:
    """Maps ``[..., query, key]`` on ``positions`` only (rows and keys), each row renormalised to
    sum to 1 (a row left with no weight stays 0): the server's aligned comparison, drawn here.
    ``None``: the maps unchanged. Returns ``[..., P, P]`` float32."""
    w = np.asarray(weights, dtype=np.float32)
    if positions is None:
        return w
    idx = np.asarray(positions, dtype=np.intp)
    sub = np.take(np.take(w, idx, axis=-2), idx, axis=-1).astype(np.float64)
    mass = sub.sum(axis=-1, keepdims=True)
    return np.divide(sub, mass, out=np.zeros_like(sub), where=mass > 0).astype(np.float32)


def pair_labels(tokens_a: list[str], tokens_b: list[str]) -> list[str]:
    """One axis label per aligned position: the token, or ``a→b`` where A and B differ there."""
    return [a if a == b else f"{a}→{b}" for a, b in zip(tokens_a, tokens_b)]


def share_colour_range(*figures: go.Figure) -> float:
    """Give every figure's first trace one colour range (the widest of them), so A's and B's maps
    read on one scale; returns the common ``zmax``."""
    lo = min(float(f.data[0].zmin) for f in figures)
    hi = max(float(f.data[0].zmax) for f in figures)
    for fig in figures:
        fig.data[0].update(zmin=lo, zmax=hi)
    return hi


def mismatch_note(n_a: int, n_b: int) -> str:
    """What to do when A and B have different token counts (Retry cannot change them)."""
    return (
        f"A has {n_a} tokens and B has {n_b}: a head-by-head comparison needs the same positions, so Retry "
        "cannot help. Make the texts differ word for word (a minimal pair), or tick “Compare by aligned "
        "tokens” to compare the positions that pair up (equal tokens and one-for-one substitutions)."
    )
