"""Pure figure builders of why a head attends (``docs/methods/qk-attribution.md``): the QK attribution
as a query-part x key-part heatmap, each key-side part's share as bars ("which earlier heads make this
head attend here"), and the query/key product by dimension (data in, ``go.Figure`` out)."""

from __future__ import annotations

import plotly.graph_objects as go

from attnscope.server.schemas import QKPublic


def _title(qk: QKPublic) -> str:
    return (
        f"L{qk.layer}H{qk.head}: query {qk.query} {qk.query_token!r} -> key {qk.key} {qk.key_token!r}, "
        f"score {qk.view.score:.3g}, weight {qk.view.weight:.3g}"
    )


def qk_matrix_figure(qk: QKPublic) -> go.Figure:
    """The terms ``scale * q_c . k_c'`` (rows: query parts, columns: key parts; they sum to the score),
    on a diverging scale centred at 0."""
    att = qk.attribution
    peak = max((abs(v) for row in att.matrix for v in row), default=1.0) or 1.0
    fig = go.Figure(
        go.Heatmap(
            z=att.matrix,
            x=[f"{p} -> key" for p in att.key_parts],
            y=[f"{p} -> query" for p in att.query_parts],
            colorscale="RdBu",
            reversescale=True,
            zmin=-peak,
            zmax=peak,
            colorbar={"title": "term"},
            hovertemplate="%{y}<br>%{x}<br>term %{z:.4g}<extra></extra>",
        )
    )
    fig.update_layout(title=_title(qk), yaxis={"autorange": "reversed"}, margin={"l": 140, "b": 120})
    return fig


def key_parts_figure(qk: QKPublic, top: int = 12) -> go.Figure:
    """The ``top`` key-side parts by ``|share|`` of the score, largest first."""
    totals = sorted(qk.attribution.key_totals.items(), key=lambda kv: -abs(kv[1]))[:top]
    fig = go.Figure(
        go.Bar(
            x=[v for _, v in totals],
            y=[k for k, _ in totals],
            orientation="h",
            marker={"color": ["#b2182b" if v > 0 else "#2166ac" for _, v in totals]},
            hovertemplate="%{y}: %{x:.4g} of the score<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"what makes L{qk.layer}H{qk.head} attend to key {qk.key}: key-side shares of the score",
        yaxis={"autorange": "reversed"},
        xaxis={"title": "share of the score"},
    )
    return fig


def qk_product_figure(qk: QKPublic) -> go.Figure:
    """``query * key`` by dimension of the head (after RoPE): which dimensions carry the match."""
    n = len(qk.view.product)
    fig = go.Figure(go.Bar(x=list(range(n)), y=qk.view.product, hovertemplate="dim %{x}: %{y:.4g}<extra></extra>"))
    fig.update_layout(
        title=f"query * key by dimension (kv head {qk.kv_head}; sum x scale = score {qk.view.score:.3g})",
        xaxis={"title": "dimension"},
    )
    return fig
