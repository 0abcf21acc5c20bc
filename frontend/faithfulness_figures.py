"""Pure builders for the faithfulness page: data in, colours / tables / ``go.Figure`` out."""

from __future__ import annotations

import re
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from attnscope.frontend.plot_config import NEGATIVE, POSITIVE

POSITIVE_RGB, NEGATIVE_RGB = (",".join(str(int(c[i : i + 2], 16)) for i in (1, 3, 5)) for c in (POSITIVE, NEGATIVE))

METRIC_LABELS = {
    "comprehensiveness": "comprehensiveness ↑",
    "sufficiency": "sufficiency ↓",
    "aopc_comprehensiveness": "AOPC comp. ↑",
    "aopc_sufficiency": "AOPC suff. ↓",
    "token_f1": "token F1 ↑",
    "iou_f1": "IOU F1 ↑",
    "auprc": "AUPRC ↑",
    "comprehensiveness_entropy": "comp. ΔH",
    "comprehensiveness_kl": "comp. KL ↑",
    "sufficiency_entropy": "suff. ΔH",
    "sufficiency_kl": "suff. KL ↓",
}
EXPLAINER_COLORS = qualitative.Plotly
MARK = re.compile(r"\[\[(.+?)\]\]", re.S)


def parse_marked_text(marked: str) -> tuple[str, list[tuple[int, int]]]:
    """Text with the human rationale in ``[[double brackets]]`` -> (clean text, [start, end) spans)."""
    clean, spans, pos = [], [], 0
    for m in MARK.finditer(marked):
        clean.append(marked[pos : m.start()])
        start = sum(len(c) for c in clean)
        clean.append(m.group(1))
        spans.append((start, start + len(m.group(1))))
        pos = m.end()
    clean.append(marked[pos:])
    return "".join(clean), spans


def token_colors(scores: Sequence[float], special: Sequence[int] = ()) -> list[str]:
    """Background colour per token: red for positive, blue for negative evidence, alpha = |score|
    relative to the largest non-special |score|; special tokens stay grey."""
    skip = set(special)
    top = max((abs(s) for i, s in enumerate(scores) if i not in skip), default=0.0) or 1.0
    out = []
    for i, s in enumerate(scores):
        if i in skip:
            out.append("rgba(200,200,200,0.35)")
        else:
            a = min(1.0, abs(s) / top)
            out.append(f"rgba({POSITIVE_RGB},{a:.3f})" if s >= 0 else f"rgba({NEGATIVE_RGB},{a:.3f})")
    return out


def curves_figure(
    bins: Sequence[float],
    comp: dict[str, Sequence[float | None]],
    suff: dict[str, Sequence[float | None]],
    title: str = "",
) -> go.Figure:
    """Comprehensiveness and sufficiency drop per bin (x: % of tokens), one line per explainer."""
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("comprehensiveness (higher is better)", "sufficiency (lower is better)")
    )
    x = [round(100 * b, 1) for b in bins]
    # one colour per explainer on both panels (was: the right panel took the next default colours,
    # so its lines did not match the one legend)
    names = list(dict.fromkeys([*comp, *suff]))
    colors = {name: EXPLAINER_COLORS[i % len(EXPLAINER_COLORS)] for i, name in enumerate(names)}
    for col, curves in ((1, comp), (2, suff)):
        for name, ys in curves.items():
            dash = "dot" if name == "random" else "solid"
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=list(ys),
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    line={"dash": dash, "color": colors[name]},
                    connectgaps=True,
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(
            title_text="% of tokens removed / kept",
            type="log",
            tickvals=x,
            ticktext=[f"{v:g}" for v in x],
            row=1,
            col=col,
        )
    fig.update_yaxes(title_text="p(target | x) − p(target | perturbed)", row=1, col=1)
    fig.update_layout(
        title=title or None,
        height=400,
        margin={"l": 60, "r": 20, "t": 70, "b": 40},
        plot_bgcolor="white",
        legend={"orientation": "h", "y": -0.3, "yanchor": "top"},
    )
    return fig


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.3f}"


LOWER_IS_BETTER = ("sufficiency", "aopc_sufficiency", "sufficiency_kl")


def _interval_cell(iv: dict | None, sign: str = "") -> str:
    """``"0.326 [0.290, 0.361]"`` (``"–"``: not measured; the mean alone without an interval)."""
    if not iv or iv.get("mean") is None:
        return "–"
    if iv.get("low") is None:
        return f"{iv['mean']:{sign}.3f}"
    return f"{iv['mean']:{sign}.3f} [{iv['low']:{sign}.3f}, {iv['high']:{sign}.3f}]"


def verdict(iv: dict | None, metric: str) -> str:
    """An explainer against random on one metric from the paired interval of ``explainer - random``: a
    difference only when the interval excludes 0 (``docs/methods/statistics.md``)."""
    if not iv or iv.get("low") is None:
        return "no interval"
    if iv["low"] <= 0 <= iv["high"]:
        return "no difference"
    return "better" if (iv["low"] > 0) == (metric not in LOWER_IS_BETTER) else "worse"


def metric_table(
    rows: Sequence[dict],
    metrics: Sequence[str],
    intervals: dict | None = None,
    vs_random: dict | None = None,
) -> tuple[list[dict], list[dict]]:
    """``DataTable`` columns and rows (explainer x metric, numbers formatted, random marked).

    With a data-set job's ``intervals`` (``{explainer: {metric: {mean, low, high, n}}}``) a cell is the mean
    with its 95 % interval over the examples; with ``vs_random`` (the paired differences ``explainer -
    random``) one more row per explainer gives the difference, its interval and the verdict. Rows that carry
    their count (a data-set job's ``n``) get an ``n`` column: the examples the explainer ran on, and for a
    paired row the examples both ran on."""
    with_n = any(r.get("n") is not None for r in rows)
    columns = [{"name": "explainer", "id": "explainer"}] + ([{"name": "n", "id": "n"}] if with_n else [])
    columns += [{"name": METRIC_LABELS.get(m, m), "id": m} for m in metrics]
    data = []
    for r in rows:
        name = r.get("explainer") or r.get("name")
        by_metric = (intervals or {}).get(name) or {}
        cells = {m: _interval_cell(by_metric[m]) if by_metric.get(m) else _fmt(r.get(m)) for m in metrics}
        label = f"{name} (baseline)" if name == "random" else name
        data.append({"explainer": label, **_n(r.get("n"), with_n), **cells})
    for r in rows if vs_random else []:
        name = r.get("explainer") or r.get("name")
        diffs = vs_random.get(name)
        if not diffs:
            continue
        cells = {m: f"{_interval_cell(diffs[m], '+')} {verdict(diffs[m], m)}" if diffs.get(m) else "–" for m in metrics}
        paired_n = max((d["n"] for d in diffs.values() if d and d.get("n") is not None), default=None)
        data.append({"explainer": f"{name} − random (paired)", **_n(paired_n, with_n), **cells})
    return columns, data


def _n(n, shown: bool) -> dict:
    """The row's ``n`` cell when the table has the column."""
    return {"n": "–" if n is None else n} if shown else {}


def best_per_metric(rows: Sequence[dict], metrics: Sequence[str]) -> dict[str, str]:
    """Name of the best explainer per metric (sufficiency: lowest; others: highest)."""
    best = {}
    for m in metrics:
        vals = [(r.get(m), r.get("explainer") or r.get("name")) for r in rows if r.get(m) is not None]
        if vals:
            if m.endswith("_entropy"):  # a change of uncertainty: no better direction
                continue
            pick = min if m in ("sufficiency", "aopc_sufficiency", "sufficiency_kl") else max
            best[m] = pick(vals)[1]
    return best
