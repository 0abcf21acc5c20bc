"""The probe result's figure (Census page): per-layer accuracy bars with their interval, and the
chance line read against them. Pure: a ``ProbeResultPublic`` in, a ``go.Figure`` out."""

from __future__ import annotations

import plotly.graph_objects as go

from attnscope.server.schemas import ProbeResultPublic


def chance_label(chance: float) -> str:
    """The chance line's label: its value and what it means."""
    return f"chance {chance:.2f}: always answering the majority class"


def probe_figure(result: ProbeResultPublic) -> go.Figure:
    """Bars of ``accuracy`` per layer (error bars: the 95 % Wilson interval over the examples; the std
    over folds for an older result without one) and a dotted line at chance, labelled with its value
    above the line's left end, on a white box so bars never hide it."""
    rows = result.rows
    if all(r.accuracy_low is not None for r in rows):
        error = {
            "type": "data",
            "array": [r.accuracy_high - r.accuracy for r in rows],
            "arrayminus": [r.accuracy - r.accuracy_low for r in rows],
        }
        what = "95 % Wilson interval"
    else:
        error, what = {"type": "data", "array": [r.accuracy_std for r in rows]}, "std over folds"
    fig = go.Figure(
        go.Bar(
            x=[r.layer for r in rows],
            y=[r.accuracy for r in rows],
            name="accuracy",
            error_y=error,
            hovertemplate="layer %{x}: accuracy %{y:.3f}<extra></extra>",
        )
    )
    fig.add_hline(
        y=result.chance,
        line_dash="dot",
        line_color="#444",
        annotation_text=chance_label(result.chance),
        annotation_position="top left",
        annotation_bgcolor="rgba(255,255,255,0.85)",
        annotation_font_size=12,
    )
    fig.update_layout(
        title={
            "text": f"Probe ({result.classifier}): label from each layer's "
            f"maps ({result.n} examples, {result.folds}-fold; bars: {what})",
            "font": {"size": 13},
        },
        xaxis={"title": {"text": "layer"}, "dtick": 1},
        yaxis={"title": {"text": "accuracy"}, "range": [0, 1]},
        height=380,
    )
    return fig
