"""Figures of what heads write (pure: API models in, Plotly figures out): each head's share of a
predicted token's direct logit attribution (the largest), the logit lens of one position as a layers
x top-k grid beside the target's rank by layer, and the compact lens of a contribution graph's node
(the predicted token's probability by layer, each layer's top token)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attnscope.frontend.plot_config import NEGATIVE, POSITIVE, SEQUENTIAL
from attnscope.server.schemas import AttributionPublic, LensPublic

DLA_TOP = 20  # heads shown in the DLA bar
SELECTED_OUTLINE = "#1d2330"  # the outline of the selected head's bar


def head_shares(att: AttributionPublic) -> np.ndarray:
    """``[layer, head]`` each head's share of the heads' direct write: its part over the sum of every
    head's ``|part|`` (so the shares' magnitudes sum to 1; a negative share writes against the target)."""
    heads = np.asarray(att.heads, dtype=np.float64)  # [layer, head]
    total = float(np.abs(heads).sum())
    return heads / total if total > 0 else np.zeros_like(heads)


def top_heads(att: AttributionPublic, top: int = DLA_TOP) -> list[tuple[int, int, float]]:
    """``[(layer, head, part)]`` of the ``top`` heads by ``|part|``, largest first."""
    heads = np.asarray(att.heads, dtype=np.float64)  # [layer, head]
    order = np.argsort(-np.abs(heads), axis=None, kind="stable")[:top]
    return [(int(i // heads.shape[1]), int(i % heads.shape[1]), float(heads.flat[i])) for i in order]


def dla_figure(att: AttributionPublic, top: int = DLA_TOP) -> go.Figure:
    """Horizontal bars: the ``top`` heads' shares of the heads' direct write (largest |share| at the
    top, ``head_shares``), each bar's part of ``logit(target)`` on hover. ``customdata`` holds
    ``[layer, head, part]`` (a click selects the head); the outlines (``marker.line.width``, 0 each)
    and a third title line are left for the selected head (Explore draws them in the browser)."""
    rows = top_heads(att, top)[::-1]
    share = head_shares(att)
    labels = [f"L{layer}H{head}" for layer, head, _ in rows]
    parts = [p for *_, p in rows]
    x = [100 * float(share[layer, head]) for layer, head, _ in rows]
    held = sum(abs(v) for v in x)  # percent of the sum of |part| over every head
    fig = go.Figure(
        go.Bar(
            x=x,
            y=labels,
            orientation="h",
            marker_color=[POSITIVE if p >= 0 else NEGATIVE for p in parts],
            marker_line={"width": [0] * len(rows), "color": SELECTED_OUTLINE},
            customdata=[[la, h, p] for la, h, p in rows],
            hovertemplate="%{y}: %{x:.1f} % of the heads' direct write, part %{customdata[2]:+.3f}<extra></extra>",
        )
    )
    mlp = float(np.sum(att.mlp))
    n_heads = share.size
    fig.update_layout(
        title=f"Heads writing {att.target!r} after position {att.position} · logit {att.logit:.2f}"
        f"<br><sub>the {len(rows)} largest of {n_heads} heads hold {held:.0f} % of Σ|part| · heads "
        f"{float(np.sum(att.heads)):+.2f}, MLPs {mlp:+.2f}, embedding {att.embed:+.2f}, bias {att.bias:+.2f}</sub>",
        xaxis_title="share of the heads' direct write (%)",
        margin={"l": 70, "r": 20, "t": 100, "b": 40},
        height=max(380, 22 * len(rows) + 160),
    )
    return fig


def lens_figure(lens: LensPublic, highlight: float | None = None) -> go.Figure:
    """The lens of one position: the probability, at each layer, of the token the model predicts
    there (bars), each layer's top token as the bar's label; ``highlight``: a dashed line at that
    layer (a contribution graph's node)."""
    cells = [row[-1] for row in lens.cells]  # [layer], the last position asked
    probs = [c.target_prob for c in cells]
    tops = [c.top[0].token if c.top else "" for c in cells]
    layers = list(range(lens.layers))
    fig = go.Figure(
        go.Bar(
            x=layers,
            y=probs,
            text=tops,
            textposition="outside",
            customdata=[[c.target_rank] for c in cells],
            hovertemplate="layer %{x}: p = %{y:.3f}, rank %{customdata[0]}, top %{text}<extra></extra>",
        )
    )
    first = lens.first_top_layer[-1]
    target = cells[-1].top[0].token if cells[-1].top else ""
    fig.update_layout(
        title=f"Logit lens after position {lens.positions[-1]} ({lens.tokens[-1]!r}): p({target!r}) by layer"
        + (f"<br><sub>top token from layer {first} on</sub>" if first is not None else ""),
        xaxis_title="layer (0: the embedding)",
        yaxis={"title": "probability", "range": [0, 1.1]},
        margin={"l": 60, "r": 20, "t": 70, "b": 40},
        height=360,
    )
    if highlight is not None:
        fig.add_vline(x=highlight, line={"dash": "dash", "color": "#444444"}, annotation_text="node")
    return fig


def shown_token(token: str) -> str:
    """A decoded token as it reads in a cell: spaces and line breaks made visible (``␣``, ``↵``)."""
    return token.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") or "∅"


def lens_grid_figure(lens: LensPublic, index: int = -1) -> go.Figure:
    """The logit lens of one position (``index`` into ``lens.positions``) as a layers x top-k grid:
    each layer's top tokens, most probable first, coloured by probability (``customdata``: the raw
    token), beside the target's rank at each layer (1 = the top token; log scale). Layer 0 reads the
    embedding, the last layer is the model's own output."""
    cells = [row[index] for row in lens.cells]  # [layer]
    k = max((len(c.top) for c in cells), default=0)
    layers = list(range(lens.layers))
    pad = lambda row, fill: row + [fill] * (k - len(row))  # noqa: E731
    z = [pad([t.prob for t in c.top], None) for c in cells]
    raw = [pad([t.token for t in c.top], "") for c in cells]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.74, 0.26], horizontal_spacing=0.04)
    fig.add_trace(
        go.Heatmap(
            z=z,
            x=[f"#{r + 1}" for r in range(k)],
            y=layers,
            text=[[shown_token(t) if t else "" for t in row] for row in raw],
            customdata=raw,
            texttemplate="%{text}",
            textfont={"size": 11},
            colorscale=SEQUENTIAL,
            zmin=0,
            zmax=1,
            colorbar={"title": {"text": "p"}, "x": 1.02},
            hovertemplate="layer %{y} · %{x}: %{text} p = %{z:.3f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    ranks = [c.target_rank + 1 for c in cells]
    fig.add_trace(
        go.Scatter(
            x=ranks,
            y=layers,
            mode="lines+markers",
            marker={"size": 5, "color": POSITIVE},
            line={"color": POSITIVE},
            customdata=[c.target_prob for c in cells],
            hovertemplate="layer %{y}: target rank %{x}, p = %{customdata:.3f}<extra></extra>",
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    target = lens.target if lens.target is not None else (cells[-1].top[0].token if cells and cells[-1].top else "")
    whose = "target" if lens.target is not None else "the model's own next token"
    first = lens.first_top_layer[index]
    pos = lens.positions[index]
    fig.update_layout(
        title=f"Logit lens after position {pos} ({lens.tokens[index]!r}): top {k} tokens per layer"
        f"<br><sub>{whose} {target!r}: its rank by layer at right"
        + (f"; the top token from layer {first} on" if first is not None else "; never the top token to the end")
        + "</sub>",
        height=max(360, 20 * lens.layers + 130),
        margin={"l": 60, "r": 20, "t": 80, "b": 50},
        plot_bgcolor="white",
    )
    fig.update_yaxes(title_text="layer (0: the embedding)", dtick=1 if lens.layers <= 40 else None, row=1, col=1)
    fig.update_xaxes(title_text="rank among the layer's tokens", side="bottom", row=1, col=1)
    fig.update_xaxes(type="log", title_text="target rank (1 = top)", row=1, col=2)
    return fig
