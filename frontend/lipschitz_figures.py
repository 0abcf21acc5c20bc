"""Pure figure builders of the measure page's Lipschitz panels: the DERIVED bound vs the estimate
per layer, and the fixed-point iteration of a block with its bound along the orbit. Arrays in,
``go.Figure`` (or a summary string) out; no HTTP, no Dash state."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

BOUND_COLOR, ESTIMATE_COLOR = "#d62728", "#1f77b4"


def lipschitz_figure(rows: list[dict]) -> go.Figure:
    """DERIVED bound vs empirical estimate per layer, as log10 values (a log scale that survives
    bounds like 10^700, beyond float64). Two panels with their own axes: the bound is hundreds of
    decades above the estimate, so on one axis L̂ was a flat line at 0.

    Args:
        rows: one dict per layer with ``layer``, ``log10_bound``, ``log10_estimate``, ``radius``.
    """
    rows = sorted(rows, key=lambda r: r["layer"])
    x = [f"L{r['layer']}" for r in rows]
    bound = [r["log10_bound"] for r in rows]
    est = [r["log10_estimate"] for r in rows]
    ratio = [e - b for e, b in zip(est, bound)]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1)
    fig.add_trace(
        go.Scatter(
            x=x,
            y=bound,
            mode="lines+markers",
            name="L (DERIVED bound)",
            line={"color": BOUND_COLOR},
            customdata=[[r["radius"]] for r in rows],
            hovertemplate="%{x}: log10 L = %{y:.1f}<br>R = %{customdata[0]:.2f}<extra>bound</extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=est,
            mode="lines+markers",
            name="L̂ (estimate)",
            line={"color": ESTIMATE_COLOR},
            customdata=[[q] for q in ratio],
            hovertemplate="%{x}: log10 L̂ = %{y:.2f}<br>log10(L̂/L) = %{customdata[0]:.1f}<extra>estimate</extra>",
        ),
        row=2,
        col=1,
    )
    fig.update_layout(
        title={"text": "Lipschitz constant in W1: DERIVED bound vs estimate"},
        height=460,
        plot_bgcolor="white",
        margin={"l": 70, "r": 10, "t": 60, "b": 40},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right"},
    )
    fig.update_yaxes(title={"text": "log10 L (bound)"}, row=1, col=1)
    fig.update_yaxes(title={"text": "log10 L̂ (estimate)"}, row=2, col=1)
    fig.update_xaxes(title={"text": "layer"}, row=2, col=1)
    return fig


def log_ticks(values) -> dict:
    """Axis settings for a log axis over ``values`` (> 0): one labelled tick every k decades, at
    most ~6 labels, powers of ten (Plotly's default labels 2 and 5 of every decade, crammed)."""
    v = np.asarray([x for x in values if x is not None and x > 0], dtype=float)
    if v.size == 0:
        return {"type": "log"}
    decades = float(np.log10(v.max()) - np.log10(v.min()))
    if decades < 1.5:
        return {"type": "log", "exponentformat": "power"}
    return {
        "type": "log",
        "dtick": max(1, int(np.ceil(decades / 6))),
        "exponentformat": "power",
        "minor": {"ticks": ""},
    }


def fixed_point_figure(
    w1_steps: Sequence[float],
    label: str,
    trained_depth: int | None = None,
    rate: float | None = None,
    normalised: Sequence[float] | None = None,
    orbit_bound: Sequence[float] | None = None,
    orbit_ratio: Sequence[float | None] | None = None,
) -> go.Figure:
    """``W1(mu_{t+1}, mu_t)`` against the iteration t on a log axis (a line at the trained depth),
    with the standardised measure's steps when given. With ``orbit_bound`` (log10 L_t of a shared
    block) a second panel sets the DERIVED bound along the orbit against the observed step ratios,
    with the contraction threshold L = 1."""
    w = np.maximum(np.asarray(w1_steps, dtype=float), 1e-16)  # a log axis cannot show 0
    steps = np.arange(1, len(w) + 1)
    two = orbit_bound is not None and len(orbit_bound) > 0
    fig = make_subplots(
        rows=2 if two else 1,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        row_heights=[0.55, 0.45] if two else None,
    )
    fig.add_trace(
        go.Scatter(
            x=steps,
            y=w,
            mode="lines+markers",
            name="W1 between iterates",
            hovertemplate="step %{x}: W1 = %{y:.3g}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    if normalised is not None:
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=np.maximum(np.asarray(normalised, dtype=float), 1e-16),
                mode="lines",
                name="W1, standardised tokens",
                line={"dash": "dash", "color": "#2ca02c"},
                hovertemplate="step %{x}: W1 (standardised) = %{y:.3g}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    title = (
        "W1 between successive iterates"
        + (f" · tail rate ≈ {rate:.3f}" if rate is not None else "")
        + f"<br><sup>{label}</sup>"
    )
    fig.update_layout(
        title={"text": title, "font": {"size": 13}},
        height=560 if two else 360,
        plot_bgcolor="white",
        margin={"l": 60, "r": 10, "t": 60, "b": 40},
        legend={"orientation": "h", "y": -0.12 if two else -0.2, "x": 0},
    )
    shown = list(w) + (list(np.maximum(np.asarray(normalised, dtype=float), 1e-16)) if normalised is not None else [])
    fig.update_yaxes(**log_ticks(shown), title={"text": "W1"}, row=1, col=1)
    fig.update_xaxes(title={"text": "iteration"}, row=2 if two else 1, col=1)
    if trained_depth is not None:
        fig.add_vline(
            x=trained_depth + 0.5,
            line_dash="dot",
            line_color="#888",
            annotation_text="trained depth",
            annotation_position="top right",
            row=1,
            col=1,
        )
    if two:
        t = np.arange(1, len(orbit_bound) + 1)
        fig.add_trace(
            go.Scatter(
                x=t,
                y=list(orbit_bound),
                mode="lines",
                name="log10 L_t (DERIVED bound)",
                line={"color": BOUND_COLOR},
                hovertemplate="step %{x}: log10 L = %{y:.2f}<extra>bound</extra>",
            ),
            row=2,
            col=1,
        )
        ratio = [None if r is None or r <= 0 else float(np.log10(r)) for r in (orbit_ratio or [])]
        fig.add_trace(
            go.Scatter(
                x=t[: len(ratio)],
                y=ratio,
                mode="markers",
                name="log10 observed step ratio",
                marker={"color": ESTIMATE_COLOR, "size": 5},
                hovertemplate="step %{x}: log10 ratio = %{y:.3f}<extra>observed</extra>",
            ),
            row=2,
            col=1,
        )
        fig.add_hline(
            y=0,
            line_dash="dot",
            line_color="#444",
            annotation_text="L = 1: contraction below",
            annotation_position="bottom right",
            row=2,
            col=1,
        )
        fig.update_yaxes(title={"text": "log10 (max-token metric)"}, row=2, col=1)
    return fig


def fixed_point_summary(fp) -> str:
    """One paragraph under the curve: behaviour, and the contraction condition when a bound exists.

    ``fp``: a ``attnscope.server.schemas.FixedPointPublic``."""
    parts = {
        "converges": "The iterates converge to a fixed point",
        "drifts": f"No fixed point: the cloud drifts by W1 ≈ {fp.drift:.3g} per step (the residual stream grows)"
        if fp.drift is not None
        else "No fixed point: the cloud drifts",
        "diverges": "The iterates diverge",
        "undecided": "Undecided after these steps (try more)",
    }
    text = parts.get(fp.behaviour, fp.behaviour)
    if fp.normalised_order is not None and fp.behaviour != "converges":
        text += f"; the standardised tokens (what LayerNorm sees) settle like t^-{fp.normalised_order:.2f}"
    text += "."
    b = fp.block_bound
    if b is not None:
        orbit = b.log10_orbit_bound
        span = f"{orbit[0]:.2f} → {orbit[-1]:.2f}" if orbit else "n/a"
        verdict = "MET (a unique fixed cloud)" if b.contraction else "not met"
        text += (
            f" Contraction condition L < 1 (DERIVED fixed-key bound, max-token metric): {verdict}. "
            f"Global log10 L = {b.log10_global_bound:.2f}; along the orbit log10 L_t = {span}"
        )
        if b.orbit_worst_slack is not None:
            text += f"; observed step ratios stay below it (worst log10 ratio/bound {b.orbit_worst_slack:.2f})"
        text += (
            f". L̂ around x₀ = {b.estimate:.3g} (bound there 10^{b.log10_bound_at_estimate:.2f}). "
            "With both residuals L ≥ 1 always: the bound can show non-expansion at best, never contraction."
        )
    elif fp.log10_bound_attention is not None:
        verdict = "met" if fp.attention_contraction else "not met"
        text += (
            f" Attention sublayer with residual: log10 L = {fp.log10_bound_attention:.1f} on the orbit's ball, "
            f"contraction {verdict} (FFN and LayerNorms not bounded)."
        )
    return text
