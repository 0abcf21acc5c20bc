"""The contribution graph of one prediction as a layered picture (pure: a ``GraphPublic`` in, a Plotly
figure out): positions across, the residual stream's levels up the page (the stream entering block
``l`` at ``2 l``, the stream after its attention at ``2 l + 1``, the final stream on top), each edge a
line whose width grows with its importance, coloured by kind; a click on a node names the node
(``clicked_node``) whose lens the page then shows."""

from __future__ import annotations

import plotly.graph_objects as go

from attnscope.frontend.token_labels import MOST_TICKS
from attnscope.server.schemas import GraphPublic

EDGE_COLOURS = {"attention": "#d95f02", "residual": "#8c8c8c", "mlp": "#1b9e77"}
WIDTH_BINS = ((0.5, 7.0), (0.25, 4.5), (0.1, 2.5), (0.0, 1.0))  # (lowest weight, line width), heaviest first
NODE_KINDS = ("pre", "mid")


def level(kind: str, layer: int) -> int:
    """The node's height: ``2 layer`` for the stream entering block ``layer``, ``2 layer + 1`` after
    its attention (``pre`` of the last block + 1 is the final stream, the top)."""
    return 2 * layer + (1 if kind == "mid" else 0)


def edge_width(weight: float) -> float:
    """Line width of an edge of importance ``weight`` (0..1): wider for heavier edges, in 4 steps."""
    return next(width for low, width in WIDTH_BINS if weight >= low)


def _node_label(kind: str, layer: int) -> str:
    return f"x{layer}" if kind == "pre" else f"m{layer}"


def graph_figure(g: GraphPublic) -> go.Figure:
    """The layered picture of ``g``: one line trace per edge kind and width step (``None`` between
    segments), an invisible marker at each attention edge's middle carrying its hover (weight and
    three largest heads; none on the residual and MLP edges, whose middles lie beside the nodes),
    and the nodes as markers with ``customdata [kind, layer, position]``."""
    xy = [(n.position, level(n.kind, n.layer)) for n in g.nodes]
    fig = go.Figure()
    shown: set[str] = set()
    for kind, colour in EDGE_COLOURS.items():
        for _low, width in WIDTH_BINS:
            xs: list = []
            ys: list = []
            for e in g.edges:
                if e.kind == kind and edge_width(e.weight) == width:
                    (x0, y0), (x1, y1) = xy[e.source], xy[e.target]
                    xs += [x0, x1, None]
                    ys += [y0, y1, None]
            if xs:
                fig.add_trace(
                    go.Scatter(
                        x=xs,
                        y=ys,
                        mode="lines",
                        line={"color": colour, "width": width},
                        name=kind,
                        legendgroup=kind,
                        showlegend=kind not in shown,
                        hoverinfo="skip",
                    )
                )
                shown.add(kind)
    # hover markers at the middle of the attention edges only: a residual or MLP edge runs up its node's own
    # column, so its middle lies half a level from a node (3 px for SmolLM2's 30 layers), where Plotly's closest
    # hover prefers the invisible marker (distance 0 within its radius) to the node: a click on the node took it
    across = [e for e in g.edges if e.kind == "attention"]
    hover = []
    for e in across:
        s, t = g.nodes[e.source], g.nodes[e.target]
        text = f"{e.kind} {_node_label(s.kind, s.layer)}[{s.position}] → {_node_label(t.kind, t.layer)}[{t.position}]"
        text += f": {e.weight:.3f}"
        if e.heads:
            top = sorted(range(len(e.heads)), key=lambda h: -e.heads[h])[:3]
            text += "<br>heads " + ", ".join(f"H{h} {e.heads[h]:.3f}" for h in top)
        hover.append(text)
    fig.add_trace(
        go.Scatter(
            x=[(xy[e.source][0] + xy[e.target][0]) / 2 for e in across],
            y=[(xy[e.source][1] + xy[e.target][1]) / 2 for e in across],
            mode="markers",
            marker={"size": 6, "opacity": 0},
            text=hover,
            hovertemplate="%{text}<extra></extra>",
            customdata=[["edge", 0, 0]] * len(across),
            showlegend=False,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[x for x, _ in xy],
            y=[y for _, y in xy],
            mode="markers",
            marker={"size": 9, "color": "#222222"},
            customdata=[[n.kind, n.layer, n.position] for n in g.nodes],
            text=[f"{_node_label(n.kind, n.layer)} at {n.position} {n.token!r}" for n in g.nodes],
            hovertemplate="%{text}<br>click: its logit lens<extra></extra>",
            name="node",
            showlegend=False,
        )
    )
    positions = sorted({n.position for n in g.nodes})
    tokens = {n.position: n.token for n in g.nodes}
    # at most MOST_TICKS labels: a 4,096-token graph holds hundreds of positions, and Plotly measures each
    labelled = positions[:: max(1, -(-len(positions) // MOST_TICKS))]
    top = level("pre", max((n.layer for n in g.nodes), default=0))
    step = max(1, top // 2 // 10)  # about 10 layer labels
    fig.update_layout(
        title=f"Contribution graph of {g.target!r} at position {g.position} · threshold {g.threshold:g}"
        f"<br><sub>{len(g.nodes)} nodes, {len(g.edges)} edges; width: importance (Ferrando and Voita)</sub>",
        xaxis={
            "title": "position",
            "tickvals": labelled,
            "ticktext": [f"{p}:{tokens[p]}" for p in labelled],
            "range": [min(positions, default=0) - 0.5, max(positions, default=0) + 0.5],
        },
        yaxis={
            "title": "layer (x: entering the block, m: after its attention)",
            "tickvals": list(range(0, top + 1, 2 * step)),
            "ticktext": [f"x{lv // 2}" for lv in range(0, top + 1, 2 * step)],
        },
        legend={"orientation": "h", "y": -0.15},
        margin={"l": 70, "r": 20, "t": 70, "b": 80},
        height=560,
        hovermode="closest",
    )
    return fig


def clicked_node(click_data: dict | None) -> tuple[str, int, int] | None:
    """``(kind, layer, position)`` of the node a ``clickData`` points at (None: no click, an edge)."""
    points = (click_data or {}).get("points") or []
    data = points[0].get("customdata") if points else None
    if not isinstance(data, list) or len(data) != 3 or data[0] not in NODE_KINDS:
        return None
    return str(data[0]), int(data[1]), int(data[2])


def lens_layer(kind: str, layer: int) -> float:
    """Where a node sits on the lens's layer axis (row ``l``: the stream entering block ``l``); the
    stream after block ``l``'s attention lies between rows ``l`` and ``l + 1``."""
    return layer + (0.5 if kind == "mid" else 0.0)
