"""Pure figure builders of why a head attends (``docs/methods/qk-attribution.md``): the QK attribution
as a query-part x key-part heatmap, each key-side part's share as bars ("which earlier heads make this
head attend here"), the query/key product by dimension, and the composition scores into one head
(data in, ``go.Figure`` out)."""

from __future__ import annotations

import plotly.graph_objects as go

from attnscope.frontend.plot_config import DIVERGING
from attnscope.server.schemas import CompositionPublic, QKPublic


def _title(qk: QKPublic) -> str:
    capped = "" if qk.view.softcap is None else f" (soft-capped logit {qk.view.logit:.3g})"
    return (
        f"L{qk.layer}H{qk.head}: query {qk.query} {qk.query_token!r} -> key {qk.key} {qk.key_token!r}, "
        f"score {qk.view.score:.3g}{capped}, weight {qk.view.weight:.3g}"
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
            colorscale=DIVERGING,
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


def head_composition_figure(comp: CompositionPublic, layer: int, head: int) -> go.Figure:
    """The ``comp.mode``-composition of every head of the earlier layers into ``L{layer}H{head}``
    (rows: source layers ``0..layer - 1``, columns: source heads), on a scale from 0 whose colour bar
    marks the random baseline; layer 0 reads no earlier head (a message figure says so)."""
    mean, std = comp.baseline_mean, comp.baseline_std
    if layer == 0:
        fig = go.Figure()
        fig.update_layout(
            title=f"L0H{head} reads no earlier head: composition starts at layer 1",
            xaxis={"visible": False},
            yaxis={"visible": False},
        )
        return fig
    z = [[comp.scores[src][h][layer][head] for h in range(comp.n_heads)] for src in range(layer)]
    peak = max(max(row) for row in z)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"H{h}" for h in range(comp.n_heads)],
            y=[f"L{src}" for src in range(layer)],
            colorscale="Viridis",
            zmin=0.0,
            zmax=max(peak, mean + 3 * std),
            colorbar={"title": "score", "tickvals": [0.0, mean, peak], "ticktext": ["0", "random", f"{peak:.3g}"]},
            hovertemplate=f"L%{{y}} %{{x}} -> L{layer}H{head}<br>{comp.mode.upper()}-composition %{{z:.4f}}"
            f"<br>random {mean:.4f} ± {std:.4f}<extra></extra>",
        )
    )
    best = max(((src, h) for src in range(layer) for h in range(comp.n_heads)), key=lambda sh: z[sh[0]][sh[1]])
    fig.update_layout(
        title=f"{comp.mode.upper()}-composition into L{layer}H{head}: strongest L{best[0]}H{best[1]} "
        f"{peak:.3g} (random {mean:.3g} ± {std:.2g})",
        yaxis={"autorange": "reversed"},
    )
    return fig


def layer_pair_composition_figure(comp: CompositionPublic, layer: int | None = None) -> go.Figure:
    """The ``comp.mode``-composition between layers: ``[src_layer][dst_layer]`` the largest score over
    their head pairs (``comp.layer_max``; cells with ``dst <= src`` left empty, no head composes with a
    later or its own layer), on a scale from 0 whose colour bar marks the random baseline; ``layer``
    (the selected head's) outlined as the destination column."""
    n = comp.n_layers
    mean, std = comp.baseline_mean, comp.baseline_std
    z = [[comp.layer_max[src][dst] if dst > src else None for dst in range(n)] for src in range(n)]
    cells = [(src, dst) for src in range(n) for dst in range(src + 1, n)]
    best = max(cells, key=lambda sd: z[sd[0]][sd[1]]) if cells else None
    peak = z[best[0]][best[1]] if best else mean
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"L{d}" for d in range(n)],
            y=[f"L{s}" for s in range(n)],
            colorscale="Viridis",
            zmin=0.0,
            zmax=max(peak, mean + 3 * std),
            colorbar={"title": "score", "tickvals": [0.0, mean, peak], "ticktext": ["0", "random", f"{peak:.3g}"]},
            hoverongaps=False,
            hovertemplate=f"%{{y}} -> %{{x}}<br>largest {comp.mode.upper()}-composition %{{z:.4f}}"
            f"<br>random {mean:.4f} ± {std:.4f}<extra></extra>",
        )
    )
    where = f"strongest L{best[0]} -> L{best[1]} {peak:.3g}" if best else "one layer: no pair"
    fig.update_layout(
        title=f"{comp.mode.upper()}-composition between layers (largest over head pairs): {where} "
        f"(random {mean:.3g} ± {std:.2g})",
        xaxis={"title": "reading layer"},
        yaxis={"title": "writing layer", "autorange": "reversed"},
    )
    if layer is not None and 0 < layer < n:
        fig.add_shape(
            type="rect", x0=layer - 0.5, x1=layer + 0.5, y0=-0.5, y1=layer - 0.5, line={"color": "#d62728", "width": 2}
        )
    return fig
