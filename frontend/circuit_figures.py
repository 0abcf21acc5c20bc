"""Pure figure builders of the Circuits page (data in, ``go.Figure`` out): the head-level graph of a
circuit and its faithfulness curve.

The graph: the embedding ``E`` on top, then one row per layer (layers top to bottom: the residual
stream flows down), its query heads ``a{l}.h{h}`` left to right and its MLP ``m{l}`` at the right
end, the ``logits`` at the bottom. An edge ``sender -> receiver`` (names as the API gives them:
``docs/methods/circuits.md``) is a line from the sender's node to the receiver's: a head's ``<q>``
input ends at that head; a key/value head's ``<k>``/``<v>`` input (``a{l}.g{g}``, shared by query
heads ``g * n_heads / n_kv ..``) ends at the middle of the query heads that share it. Colour: the
score's sign (red: patching the edge raises the metric, blue: lowers it); width: ``|score|``; dash:
the input (q solid, k dashed, v dotted, MLP and logits solid).
"""

from __future__ import annotations

import re

import plotly.graph_objects as go

from attnscope.frontend.plot_config import NEGATIVE, POSITIVE

SENDER = re.compile(r"^(?:E|a(\d+)\.h(\d+)|m(\d+))$")
RECEIVER = re.compile(r"^(?:logits|m(\d+)|a(\d+)\.h(\d+)<q>|a(\d+)\.g(\d+)<([kv])>)$")
DASH = {"q": "solid", "k": "dash", "v": "dot", "mlp": "solid", "logits": "solid"}
WIDTHS = (1.0, 2.0, 3.5, 5.5, 8.0)  # |score| in five bands of the largest


def head_label(node: str) -> str | None:
    """``"a3.h2"`` -> ``"L3H2"`` (a head sender's Explore label); None for ``E``, MLPs, logits."""
    m = re.fullmatch(r"a(\d+)\.h(\d+)", node or "")
    return f"L{m[1]}H{m[2]}" if m else None


def _sender_xy(name: str, n_heads: int, n_layers: int) -> tuple[float, float]:
    m = SENDER.match(name)
    if m is None:
        raise ValueError(f"unknown sender {name!r}")
    if name == "E":
        return (n_heads - 1) / 2, 1.0
    if m[1] is not None:
        return float(m[2]), -float(m[1])
    return float(n_heads), -float(m[3]) - 0.5


def _receiver_xy(name: str, n_heads: int, n_kv: int, n_layers: int) -> tuple[float, float, str]:
    """``(x, y, part)``: where an edge into ``name`` ends."""
    m = RECEIVER.match(name)
    if m is None:
        raise ValueError(f"unknown receiver {name!r}")
    if name == "logits":
        return (n_heads - 1) / 2, -float(n_layers), "logits"
    if m[1] is not None:
        return float(n_heads), -float(m[1]) - 0.5, "mlp"
    if m[2] is not None:
        return float(m[3]), -float(m[2]), "q"
    per = n_heads // max(n_kv, 1)
    g = int(m[5])
    return g * per + (per - 1) / 2, -float(m[4]), m[6]


def circuit_graph_figure(
    edges: list[dict], n_layers: int, n_heads: int, n_kv: int, shown: int | None = None, title: str = ""
) -> go.Figure:
    """The top ``shown`` of ``edges`` (``{sender, receiver, score}``, by decreasing ``|score|``) over
    every node of the graph; head nodes carry their Explore label (``L{l}H{h}``) as ``customdata``."""
    edges = edges[: len(edges) if shown is None else max(0, shown)]
    fig = go.Figure()
    top = max((abs(e["score"]) for e in edges), default=0.0) or 1.0
    groups: dict[tuple, dict] = {}
    ends_x, ends_y, ends_text = [], [], []
    for e in edges:
        x0, y0 = _sender_xy(e["sender"], n_heads, n_layers)
        x1, y1, part = _receiver_xy(e["receiver"], n_heads, n_kv, n_layers)
        band = min(int(abs(e["score"]) / top * len(WIDTHS)), len(WIDTHS) - 1)
        key = (e["score"] >= 0, part, band)
        g = groups.setdefault(key, {"x": [], "y": []})
        g["x"] += [x0, x1, None]
        g["y"] += [y0, y1, None]
        ends_x.append((x0 + x1) / 2)
        ends_y.append((y0 + y1) / 2)
        ends_text.append(f"{e['sender']} → {e['receiver']}<br>score {e['score']:+.4g}")
    for (positive, part, band), g in sorted(groups.items(), key=lambda kv: kv[0][2]):
        fig.add_trace(
            go.Scatter(
                x=g["x"], y=g["y"], mode="lines", hoverinfo="skip", showlegend=False,
                line={"color": POSITIVE if positive else NEGATIVE, "width": WIDTHS[band], "dash": DASH[part]},
                opacity=0.75, name=f"{'+' if positive else '−'} {part}",
            )
        )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=ends_x, y=ends_y, mode="markers", marker={"size": 6, "opacity": 0}, text=ends_text,
            hovertemplate="%{text}<extra></extra>", showlegend=False, name="edges",
        )
    )  # fmt: skip
    used = {e["sender"] for e in edges} | {re.sub(r"<.*>$", "", e["receiver"]) for e in edges}
    hx, hy, hlabel, hcolour = [], [], [], []
    for layer in range(n_layers):
        for h in range(n_heads):
            hx.append(float(h))
            hy.append(-float(layer))
            hlabel.append(f"L{layer}H{h}")
            hcolour.append("#333" if f"a{layer}.h{h}" in used else "#ccc")
    fig.add_trace(
        go.Scatter(
            x=hx, y=hy, mode="markers", name="heads", customdata=hlabel, showlegend=False,
            marker={"size": 9, "color": hcolour, "symbol": "circle"},
            hovertemplate="%{customdata}: click to open it on Explore<extra></extra>",
        )
    )  # fmt: skip
    others = [("E", (n_heads - 1) / 2, 1.0), ("logits", (n_heads - 1) / 2, -float(n_layers))]
    others += [(f"m{layer}", float(n_heads), -layer - 0.5) for layer in range(n_layers)]
    fig.add_trace(
        go.Scatter(
            x=[o[1] for o in others], y=[o[2] for o in others], mode="markers+text", name="other nodes",
            text=[o[0] if o[0] in ("E", "logits") else "" for o in others], textposition="middle left",
            customdata=[o[0] for o in others], showlegend=False,
            marker={"size": 10, "symbol": "square", "color": ["#333" if o[0] in used else "#ccc" for o in others]},
            hovertemplate="%{customdata}<extra></extra>",
        )
    )  # fmt: skip
    step = max(1, n_layers // 12)
    fig.update_layout(
        title={"text": title or f"Circuit: top {len(edges)} edges"},
        height=max(360, 26 * n_layers + 160),
        margin={"l": 50, "r": 20, "t": 50, "b": 30},
        plot_bgcolor="white",
        xaxis={
            "tickvals": [*range(n_heads), n_heads],
            "ticktext": [f"H{h}" for h in range(n_heads)] + ["MLP"],
            "showgrid": False, "zeroline": False, "range": [-0.8, n_heads + 0.8],
        },
        yaxis={
            "tickvals": [-layer for layer in range(0, n_layers, step)],
            "ticktext": [f"L{layer}" for layer in range(0, n_layers, step)],
            "showgrid": False, "zeroline": False,
        },
        hovermode="closest",
    )  # fmt: skip
    return fig


def faithfulness_curve_figure(curve: list[dict], m_clean: float, m_corrupted: float, metric: str) -> go.Figure:
    """Faithfulness (the share of ``M(clean) - M(corrupted)`` recovered) against the edges kept."""
    ks = [p["k"] for p in curve]
    fig = go.Figure(
        go.Scatter(
            x=ks, y=[p["faithfulness"] for p in curve], mode="lines+markers", name="circuit",
            hovertemplate="%{x} edges kept: %{y:.3f} of the gap recovered<extra></extra>",
        )
    )  # fmt: skip
    for y, text in ((1.0, "clean (full model)"), (0.0, "corrupted")):
        fig.add_hline(y=y, line={"dash": "dot", "color": "#888"}, annotation_text=text)
    fig.update_layout(
        title={"text": f"Faithfulness curve · {metric}: clean {m_clean:.3f}, corrupted {m_corrupted:.3f}"},
        xaxis_title="edges kept (top by |score|)",
        yaxis_title="metric recovered (fraction)",
        height=360,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
    )
    return fig
