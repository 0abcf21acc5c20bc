"""Each head's direct logit attribution beside its ablation effect (Structure's type-vs-effect panel;
pure: the head-effects answer in, a Plotly figure and text out). The API ranks the signed DLA against
the effect oriented by the metric (``dla_against``: ``-effect`` for a logit difference, whose zero
ablation takes a head's direct part ``d`` out as ``-d``; ``effect`` for the loss, which the same
removal raises); ``docs/methods/direct-logit-attribution.md`` derives it."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnscope.frontend.intervention_figures import scatter_figure

AGAINST = {"-effect": "−effect", "effect": "effect"}


def agreement_text(agreement: dict | None, against: str | None) -> str:
    """``Spearman ρ of DLA and −effect +0.21 (n = 270 heads, p = 4.7e-04)``, or why there is none."""
    if not agreement or against not in AGAINST:
        return ""
    n = agreement.get("n")
    if agreement.get("rho") is None:
        return f"Spearman ρ of DLA and {AGAINST[against]}: none (one of the two is constant over the {n} heads)"
    return (
        f"Spearman ρ of DLA and {AGAINST[against]} {agreement['rho']:+.2f} "
        f"(n = {n} heads, two-sided p = {agreement['p']:.1e})"
    )


def dla_effect_scatter(dla, effect, metric: str, against: str, agreement: dict | None) -> go.Figure:
    """One point per head: its DLA ``[layer][head]`` against its ablation effect ``[layer][head]``; for
    a logit difference (``against == "-effect"``) the dashed line ``effect = −DLA`` is where a head whose
    whole effect is its direct write would lie."""
    d = np.asarray(dla, dtype=float)
    e = np.asarray(effect, dtype=float)
    labels = [f"L{a}H{b}" for a, b in np.ndindex(d.shape)]
    rho = (agreement or {}).get("rho")
    title = f"DLA vs ablation effect · ρ(DLA, {AGAINST.get(against, against)}) = {rho:+.2f}" if rho is not None else ""
    fig = scatter_figure(
        d.ravel(), e.ravel(), labels, "direct logit attribution", f"Δ {metric}", title or "DLA vs ablation effect"
    )
    if against == "-effect" and d.size:
        m = float(np.abs(d).max()) or 1.0
        fig.add_trace(
            go.Scatter(
                x=[-m, m],
                y=[m, -m],
                mode="lines",
                line={"dash": "dash", "color": "#666666", "width": 1},
                name="effect = −DLA",
                hoverinfo="skip",
            )
        )
        fig.update_layout(showlegend=True, legend={"x": 1, "xanchor": "right", "y": 1})
    return fig


def dla_column(rows: list[dict], dla) -> list[dict]:
    """``rows`` (``{head: "L3H4", ...}``) with each head's DLA added (``"DLA"``, 4 decimals)."""
    d = np.asarray(dla, dtype=float)
    out = []
    for row in rows:
        layer, head = (int(x) for x in row["head"][1:].split("H"))
        out.append({**row, "DLA": round(float(d[layer, head]), 4)})
    return out
