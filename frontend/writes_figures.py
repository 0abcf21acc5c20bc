"""Figures of what heads write (pure: API models in, Plotly figures out): the heads of largest direct
logit attribution for a predicted token, and the logit lens of one position over the layers (the
predicted token's probability, and each layer's top token)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnscope.frontend.plot_config import NEGATIVE, POSITIVE
from attnscope.server.schemas import AttributionPublic, LensPublic

DLA_TOP = 12  # heads shown in the DLA bar


def top_heads(att: AttributionPublic, top: int = DLA_TOP) -> list[tuple[int, int, float]]:
    """``[(layer, head, part)]`` of the ``top`` heads by ``|part|``, largest first."""
    heads = np.asarray(att.heads, dtype=np.float64)  # [layer, head]
    order = np.argsort(-np.abs(heads), axis=None, kind="stable")[:top]
    return [(int(i // heads.shape[1]), int(i % heads.shape[1]), float(heads.flat[i])) for i in order]


def dla_figure(att: AttributionPublic, top: int = DLA_TOP) -> go.Figure:
    """Horizontal bars: the ``top`` heads' parts of ``logit(target)`` (largest |part| at the top)."""
    rows = top_heads(att, top)[::-1]
    labels = [f"L{layer}H{head}" for layer, head, _ in rows]
    parts = [p for *_, p in rows]
    fig = go.Figure(
        go.Bar(
            x=parts,
            y=labels,
            orientation="h",
            marker_color=[POSITIVE if p >= 0 else NEGATIVE for p in parts],
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        )
    )
    mlp = float(np.sum(att.mlp))
    fig.update_layout(
        title=f"Heads writing {att.target!r} after position {att.position} · logit {att.logit:.2f}"
        f"<br><sub>heads {float(np.sum(att.heads)):+.2f}, MLPs {mlp:+.2f}, embedding {att.embed:+.2f}, "
        f"bias {att.bias:+.2f} (final norm frozen)</sub>",
        xaxis_title="direct logit attribution",
        margin={"l": 70, "r": 20, "t": 70, "b": 40},
        height=360,
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
