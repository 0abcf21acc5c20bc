"""Pure figure builders for the structure analyses (data in, ``go.Figure`` out)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnscope.frontend.figures import COLORSCALE, HEAD_COLORS
from attnscope.frontend.plot_config import SEQUENTIAL
from attnscope.frontend.token_labels import token_ticks
from attnscope.server.schemas import EvolutionProfile


def _fmt_offset(o) -> str:
    if isinstance(o, (list, tuple)):
        return f"({o[0]:+d},{o[1]:+d})"
    return "0" if o == 0 else f"{o:+d}"


def shift_grid_figure(shift_score: list, best_offset: list, best_mass: list) -> go.Figure:
    """Layer x head heatmap of ``shift_score`` with each head's best offset written in its cell."""
    score = np.asarray(shift_score, dtype=float)
    n_layers, n_heads = score.shape
    text = [[_fmt_offset(best_offset[l][h]) for h in range(n_heads)] for l in range(n_layers)]
    mass = np.asarray(best_mass, dtype=float)
    custom = np.dstack([mass, np.full_like(mass, 0)])
    fig = go.Figure(
        go.Heatmap(
            z=score,
            x=[f"H{h}" for h in range(n_heads)],
            y=[f"L{l}" for l in range(n_layers)],
            text=text,
            texttemplate="%{text}",
            customdata=custom,
            colorscale=SEQUENTIAL,
            zmin=0,
            zmax=1,
            colorbar={"title": {"text": "shift score"}},
            hovertemplate="%{y}%{x}<br>best offset %{text}<br>mass %{customdata[0]:.3f}<br>"
            "shift score %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": "Shift heads: best offset (key − query) per head"},
        yaxis={"autorange": "reversed"},
        height=90 + 38 * n_layers,
        margin={"l": 50, "r": 20, "t": 50, "b": 40},
    )
    return fig


def kernel_figure(kernel, offsets: list, kernel_shape: list[int], label: str, r2: float) -> go.Figure:
    """The implied convolution of one head: a bar per offset (1D) or a patch (2D)."""
    k = np.asarray(kernel, dtype=float)
    title = f"{label}: implied kernel (R² = {r2:.2f} of the map is this fixed convolution)"
    if len(kernel_shape) == 1:
        fig = go.Figure(
            go.Bar(
                x=[int(o) for o in offsets],
                y=k.ravel(),
                marker_color="#2f6fde",
                hovertemplate="offset %{x:+d}<br>mass %{y:.4f}<extra></extra>",
            )
        )
        fig.update_layout(
            xaxis={"title": {"text": "offset (key − query)"}, "dtick": 1}, yaxis={"title": {"text": "mean mass"}}
        )
    else:
        r = kernel_shape[0] // 2
        ticks = list(range(-r, r + 1))
        fig = go.Figure(
            go.Heatmap(
                z=k.reshape(kernel_shape),
                x=ticks,
                y=ticks,
                colorscale=COLORSCALE,
                hovertemplate="Δrow %{y:+d} Δcol %{x:+d}<br>mass %{z:.4f}<extra></extra>",
            )
        )
        fig.update_layout(
            xaxis={"title": {"text": "Δcol"}},
            yaxis={"title": {"text": "Δrow"}, "autorange": "reversed", "scaleanchor": "x"},
        )
    fig.update_layout(
        title={"text": title, "font": {"size": 13}}, height=360, margin={"l": 50, "r": 20, "t": 50, "b": 50}
    )
    return fig


def evolution_figure(profiles: list[EvolutionProfile]) -> go.Figure:
    """Entropy (normalised) and top-1 mass per layer for one or two models, overlaid."""
    fig = go.Figure()
    for i, p in enumerate(profiles):
        color = HEAD_COLORS[i]
        n = len(p.layer_norm_entropy)
        depth = np.linspace(0, 1, n) if n > 1 else [0.0]
        name = p.model
        fig.add_trace(
            go.Scatter(
                x=depth,
                y=p.layer_norm_entropy,
                mode="lines+markers",
                name=f"{name}: entropy / log n",
                line={"color": color},
                customdata=list(range(n)),
                hovertemplate="layer %{customdata}<br>normalised entropy %{y:.3f}<extra>" + name + "</extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=depth,
                y=p.layer_top1,
                mode="lines+markers",
                name=f"{name}: top-1 mass",
                line={"color": color, "dash": "dot"},
                customdata=list(range(n)),
                hovertemplate="layer %{customdata}<br>top-1 mass %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    slopes = ", ".join(f"{p.model}: {p.slope:+.3f} nats/layer" for p in profiles)
    fig.update_layout(
        title={"text": f"Sharpening across depth ({slopes})", "font": {"size": 13}},
        xaxis={"title": {"text": "relative depth (layer / (layers − 1))"}},
        yaxis={"title": {"text": "per-layer mean"}, "range": [0, 1.05]},
        height=380,
        legend={"orientation": "h", "y": -0.25},
        margin={"l": 50, "r": 20, "t": 50, "b": 40},
    )
    return fig


def head_entropy_figure(head_norm_entropy: list, model: str) -> go.Figure:
    """Layer x head heatmap of normalised entropy (0 = one key, 1 = uniform)."""
    z = np.asarray(head_norm_entropy, dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"H{h}" for h in range(z.shape[1])],
            y=[f"L{l}" for l in range(z.shape[0])],
            colorscale=SEQUENTIAL,
            zmin=0,
            zmax=1,
            colorbar={"title": {"text": "H / log n"}},
            hovertemplate="%{y}%{x}<br>normalised entropy %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": f"Head entropy · {model}", "font": {"size": 13}},
        yaxis={"autorange": "reversed"},
        height=90 + 34 * z.shape[0],
        margin={"l": 50, "r": 20, "t": 50, "b": 40},
    )
    return fig


def importance_figure(tokens: list[str], series: dict[str, list[float]]) -> go.Figure:
    """Token importances (rollout, flow) as grouped bars over the token positions."""
    fig = go.Figure()
    idx = list(range(len(tokens)))
    for i, (name, values) in enumerate(series.items()):
        fig.add_trace(
            go.Bar(
                x=idx,
                y=values,
                name=name,
                marker_color=HEAD_COLORS[i],
                customdata=tokens,
                hovertemplate="%{customdata}<br>%{y:.4f}<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        title={"text": "What the output position draws on (rollout / flow)", "font": {"size": 13}},
        xaxis={**token_ticks(tokens), "tickangle": -60},
        yaxis={"title": {"text": "importance"}},
        height=380,
        margin={"l": 50, "r": 20, "t": 50, "b": 90},
        legend={"orientation": "h", "y": 1.1},
    )
    return fig


def grid_importance_figure(grid: list, title: str) -> go.Figure:
    """Importance over an image grid ``[rows, cols]`` (rollout on patches/pixels)."""
    z = np.asarray(grid, dtype=float)
    fig = go.Figure(
        go.Heatmap(z=z, colorscale=SEQUENTIAL, hovertemplate="row %{y} col %{x}<br>%{z:.4f}<extra></extra>")
    )
    fig.update_layout(
        title={"text": title, "font": {"size": 13}},
        yaxis={"autorange": "reversed", "scaleanchor": "x"},
        height=360,
        margin={"l": 40, "r": 20, "t": 50, "b": 30},
    )
    return fig


def census_figure(mean: list, metric: str) -> go.Figure:
    """Layer x head heatmap of a census metric's mean over the data set."""
    z = np.asarray(mean, dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"H{h}" for h in range(z.shape[1])],
            y=[f"L{l}" for l in range(z.shape[0])],
            colorscale=SEQUENTIAL,
            colorbar={"title": {"text": metric}},
            hovertemplate="%{y}%{x}<br>mean %{z:.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": f"Census: mean {metric} per head", "font": {"size": 13}},
        yaxis={"autorange": "reversed"},
        height=90 + 34 * z.shape[0],
        margin={"l": 50, "r": 20, "t": 50, "b": 40},
    )
    return fig
