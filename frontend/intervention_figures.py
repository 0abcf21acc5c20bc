"""Pure figure builders of causal tests of heads: the per-head effect grid, attention-based importance
against the effect, and a head-type score against the effect (data in, ``go.Figure`` out)."""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go

from attnscope.frontend.plot_config import DIVERGING

HEAD = re.compile(r"^\s*L(\d+)\s*H(\d+)\s*$", re.IGNORECASE)
TYPE_SCORES = ("induction", "duplicate", "previous", "sink", "shift", "cls_sink", "sep_sink")


def parse_heads(text: str | None) -> tuple[list[list[int]], list[str]]:
    """``"L0H1, L3H2"`` -> ``([[0, 1], [3, 2]], problems)`` (each bad part named in ``problems``)."""
    heads, problems = [], []
    for part in (text or "").replace(";", ",").split(","):
        if not part.strip():
            continue
        m = HEAD.match(part)
        if m is None:
            problems.append(f"{part.strip()!r} is not a head label like L0H1")
            continue
        pair = [int(m[1]), int(m[2])]
        if pair not in heads:
            heads.append(pair)
    return heads, problems


def effect_grid_figure(effect, metric: str, selected: list[list[int]] | None = None) -> go.Figure:
    """Heatmap of ``effect [layer][head]`` (diverging around 0); selected heads outlined."""
    z = np.asarray(effect, dtype=float)
    n_l, n_h = z.shape
    bound = float(np.abs(z).max()) or 1.0
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"H{h}" for h in range(n_h)],
            y=[f"L{layer}" for layer in range(n_l)],
            colorscale=DIVERGING,  # red: the metric went up, blue: down (plot_config)
            zmid=0,
            zmin=-bound,
            zmax=bound,
            colorbar={"title": {"text": f"Δ {metric}"}},
            hovertemplate="%{y}%{x}<br>Δ " + metric + " %{z:.4f}<extra></extra>",
        )
    )
    for layer, head in selected or []:
        if layer < n_l and head < n_h:
            fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5, line={"width": 2})
    fig.update_layout(
        title={"text": f"Per-head effect: Δ {metric} when the head alone is ablated"},
        height=max(320, 22 * n_l + 140),
        yaxis={"autorange": "reversed"},
        plot_bgcolor="white",
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
    )
    return fig


def scatter_figure(x, y, labels: list[str], x_title: str, y_title: str, title: str) -> go.Figure:
    """One point per head: ``x`` against ``y`` (both ``[head]`` flat), head label on hover."""
    fig = go.Figure(
        go.Scatter(
            x=list(map(float, x)),
            y=list(map(float, y)),
            mode="markers",
            text=labels,
            marker={"size": 8, "opacity": 0.8, "color": "#3b6ea8"},
            hovertemplate="%{text}<br>" + x_title + " %{x:.3f}<br>" + y_title + " %{y:.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": title},
        height=380,
        xaxis={"title": {"text": x_title}},
        yaxis={"title": {"text": y_title}},
        plot_bgcolor="white",
        margin={"l": 70, "r": 20, "t": 50, "b": 50},
    )
    return fig


def importance_scatter(grid: dict) -> go.Figure:
    """Attention-based importance (confidence) against |effect|, with the Spearman rho in the title."""
    eff = np.abs(np.asarray(grid["effect"], float))
    imp = np.asarray(grid["importance"], float)
    labels = [f"L{a}H{b}" for a, b in np.ndindex(eff.shape)]
    rho = grid["rank_agreement"]["rho"]
    title = "Attention-based importance vs causal effect" + (f" · Spearman ρ = {rho:.2f}" if rho is not None else "")
    return scatter_figure(imp.ravel(), eff.ravel(), labels, "confidence (mean max weight)", "|effect|", title)


def pick_type_score(heads: list[dict], wanted: str | None = None) -> str | None:
    """The score to plot: ``wanted`` if the heads have it, else the first of ``TYPE_SCORES`` they have."""
    have = [k for k in TYPE_SCORES if heads and k in heads[0]]
    if wanted in have:
        return wanted
    return have[0] if have else None


def type_effect_scatter(heads: list[dict], effect, score: str, metric: str) -> go.Figure:
    """A head-type score (e.g. induction) against the ablation effect, one point per head."""
    eff = np.asarray(effect, float)
    by_label = {h["head"]: h for h in heads}
    labels = [f"L{a}H{b}" for a, b in np.ndindex(eff.shape)]
    x = [by_label.get(label, {}).get(score, np.nan) for label in labels]
    return scatter_figure(x, eff.ravel(), labels, f"{score} score", f"Δ {metric}", f"{score} score vs ablation effect")


def type_effect_rows(heads: list[dict], effect, top: int = 12) -> list[dict]:
    """The ``top`` heads of largest |effect| with their type labels: ``{head, type, effect}`` rows."""
    eff = np.asarray(effect, float)
    by_label = {h["head"]: h for h in heads}
    order = np.argsort(-np.abs(eff), axis=None, kind="stable")[:top]
    rows = []
    for i in order:
        a, b = np.unravel_index(i, eff.shape)
        label = f"L{a}H{b}"
        types = by_label.get(label, {}).get("labels") or []
        rows.append({"head": label, "type": ", ".join(types) or "—", "effect": round(float(eff[a, b]), 4)})
    return rows


def patching_figure(effect, tokens: list[str], metric: str, full: float | None = None) -> go.Figure:
    """The layer x position patching plot: ``effect [layer][position]`` (diverging around 0), the
    columns labelled ``position token``; ``full`` (the change with the whole stream patched) in the
    title as the scale a cell is read against."""
    z = np.asarray(effect, dtype=float)
    n_l, n = z.shape
    bound = float(np.abs(z).max()) or 1.0
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(n)),
            y=list(range(n_l)),
            colorscale=DIVERGING,  # red: the metric went up, blue: down (plot_config)
            zmid=0,
            zmin=-bound,
            zmax=bound,
            customdata=[[tokens[p] if p < len(tokens) else "" for p in range(n)] for _ in range(n_l)],
            colorbar={"title": {"text": f"Δ {metric}"}},
            hovertemplate="after block %{y} · position %{x} %{customdata}<br>Δ " + metric + " %{z:.4f}<extra></extra>",
        )
    )
    step = 1 if n <= 48 else -(-n // 40)
    ticks = list(range(0, n, step))
    scale = f" · whole stream patched: Δ {full:+.4f}" if full is not None else ""
    fig.update_layout(
        title={"text": f"Residual stream patching: Δ {metric} per layer × position{scale}"},
        height=max(320, 22 * n_l + 170),
        xaxis={"title": {"text": "position"}, "tickvals": ticks, "ticktext": [f"{p} {tokens[p]}" for p in ticks]},
        yaxis={"title": {"text": "after block"}, "autorange": "reversed", "dtick": 1 if n_l <= 32 else None},
        plot_bgcolor="white",
        margin={"l": 70, "r": 20, "t": 50, "b": 90},
    )
    return fig


def prediction_summary(pred: dict) -> str:
    """One line: the predicted class and its probability, or the top next token."""
    if pred.get("kind") == "classification":
        labels, probs = pred["labels"], pred["probs"]
        i = int(np.argmax(probs))
        return f"{labels[i]} ({probs[i]:.3f})"
    if pred.get("kind") == "next-token" and pred.get("top_k"):
        best = pred["top_k"][-1][0]
        return f"{best['text']!r} ({best['prob']:.3f})"
    return f"embedding of {pred.get('dim')} dimensions"


__all__ = [
    "effect_grid_figure",
    "importance_scatter",
    "parse_heads",
    "patching_figure",
    "pick_type_score",
    "prediction_summary",
    "scatter_figure",
    "type_effect_rows",
    "type_effect_scatter",
]
