"""Pure figure builders of the measure page's token measures: the particle view (tokens as points
moving through the layers) and the W1 profile (how far each layer moves the measure). Arrays in,
``go.Figure`` out; no HTTP, no Dash state."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

TOKEN_COLORS = qualitative.Dark24 + qualitative.Light24


def token_colors(n: int) -> list[str]:
    """One colour per token position (cycling after 48)."""
    return [TOKEN_COLORS[i % len(TOKEN_COLORS)] for i in range(n)]


def _range(values: np.ndarray) -> list[float]:
    lo, hi = float(np.min(values)), float(np.max(values))
    pad = 0.05 * (hi - lo or 1.0)
    return [lo - pad, hi + pad]


def _points(coords: np.ndarray, tokens: list[str], colors: list[str], depth: str):
    """Scatter (2D) or Scatter3d (3D) of one depth's tokens ``coords [token, k]``; hover shows the token."""
    custom = [[i, depth] for i in range(len(tokens))]
    common = dict(
        mode="markers+text",
        text=tokens,
        customdata=custom,
        textposition="top center",
        hovertemplate="<b>%{text}</b><br>token %{customdata[0]} · %{customdata[1]}<extra></extra>",
        showlegend=False,
        name="tokens",
    )
    if coords.shape[1] == 3:
        return go.Scatter3d(
            x=coords[:, 0],
            y=coords[:, 1],
            z=coords[:, 2],
            marker={"size": 5, "color": colors},
            textfont={"size": 10},
            **common,
        )
    return go.Scatter(
        x=coords[:, 0],
        y=coords[:, 1],
        marker={"size": 11, "color": colors, "line": {"width": 1, "color": "white"}},
        textfont={"size": 11},
        **common,
    )


def _trails(coords: np.ndarray):
    """Each token's path through the depths ``coords [depth, token, k]``, one faint polyline."""
    k = coords.shape[2]
    paths = [np.vstack([coords[:, i, :], np.full((1, k), np.nan)]) for i in range(coords.shape[1])]
    flat = np.vstack(paths)
    style = dict(
        mode="lines",
        hoverinfo="skip",
        showlegend=False,
        name="paths",
        line={"color": "rgba(120,120,120,0.35)", "width": 1},
    )
    if k == 3:
        return go.Scatter3d(x=flat[:, 0], y=flat[:, 1], z=flat[:, 2], **style)
    return go.Scatter(x=flat[:, 0], y=flat[:, 1], **style)


def particle_figure(
    coords: np.ndarray,
    tokens: list[str],
    depth_labels: list[str],
    depth: int = 0,
    explained: Sequence[float] | None = None,
) -> go.Figure:
    """Tokens as particles moving through the layers.

    Args:
        coords: ``[layer + 1, token, k]`` (k = 2 or 3), one PCA basis for every depth.
        depth: the depth shown first; a slider and a play button move through the others (frames).
    """
    coords = np.asarray(coords, dtype=float)
    if coords.ndim != 3 or coords.shape[2] not in (2, 3) or coords.shape[1] != len(tokens):
        raise ValueError(f"coords must be [depth, token, 2|3] with one token label per point; got {coords.shape}")
    colors = token_colors(len(tokens))
    frames = [
        go.Frame(data=[_points(coords[d], tokens, colors, depth_labels[d])], traces=[1], name=str(d))
        for d in range(coords.shape[0])
    ]
    fig = go.Figure(data=[_trails(coords), _points(coords[depth], tokens, colors, depth_labels[depth])], frames=frames)
    steps = [
        {
            "method": "animate",
            "label": depth_labels[d].replace("after ", ""),
            "args": [
                [str(d)],
                {
                    "mode": "immediate",
                    "frame": {"duration": 0, "redraw": coords.shape[2] == 3},
                    "transition": {"duration": 0},
                },
            ],
        }
        for d in range(coords.shape[0])
    ]
    play = {
        "type": "buttons",
        "showactive": False,
        "x": 0.0,
        "y": -0.08,
        "xanchor": "left",
        "yanchor": "top",
        "buttons": [
            {
                "label": "▶ play",
                "method": "animate",
                "args": [
                    None,
                    {
                        "frame": {"duration": 700, "redraw": coords.shape[2] == 3},
                        "transition": {"duration": 300},
                        "fromcurrent": True,
                    },
                ],
            }
        ],
    }
    pcs = ["PC1", "PC2", "PC3"]
    if explained is not None:
        pcs = [f"PC{i + 1} ({100 * v:.0f}%)" for i, v in enumerate(explained)]
    layout = dict(
        title={"text": "Tokens as particles (one PCA over all depths)"},
        height=560,
        margin={"l": 50, "r": 20, "t": 50, "b": 120},
        plot_bgcolor="white",
        updatemenus=[play],
        sliders=[
            {"active": depth, "steps": steps, "x": 0.12, "len": 0.88, "y": -0.05, "currentvalue": {"prefix": "depth: "}}
        ],
    )
    if coords.shape[2] == 3:
        layout["scene"] = {
            ax: {"range": _range(coords[..., i]), "title": {"text": pcs[i]}}
            for i, ax in enumerate(("xaxis", "yaxis", "zaxis"))
        }
        layout["scene"]["aspectmode"] = "cube"
    else:
        layout["xaxis"] = {"range": _range(coords[..., 0]), "title": {"text": pcs[0]}, "zeroline": False}
        layout["yaxis"] = {"range": _range(coords[..., 1]), "title": {"text": pcs[1]}, "zeroline": False}
    fig.update_layout(**layout)
    return fig


def w1_profile_figure(w1: Sequence[float], max_entropy: Sequence[float] | None = None) -> go.Figure:
    """Bars: ``W1(mu_l, mu_{l+1})`` per layer l; the max-entropy deviation in the hover."""
    w1 = list(w1)
    layers = list(range(len(w1)))
    dev = list(max_entropy) if max_entropy is not None else [None] * len(w1)
    hover = [
        f"layer {l}: W1(μ{l}, μ{l + 1}) = {w:.4g}" + (f"<br>max-entropy deviation {d:.2e}" if d is not None else "")
        for l, w, d in zip(layers, w1, dev)
    ]
    fig = go.Figure(
        go.Bar(
            x=[f"L{l}" for l in layers], y=w1, hovertext=hover, hoverinfo="text", marker={"color": "#4c78a8"}, name="W1"
        )
    )
    fig.update_layout(
        title={"text": "W1 between successive layers"},
        height=360,
        plot_bgcolor="white",
        margin={"l": 50, "r": 10, "t": 50, "b": 40},
        yaxis={"title": {"text": "W1 (hidden-state units)"}, "rangemode": "tozero"},
        xaxis={"title": {"text": "layer"}},
    )
    return fig
