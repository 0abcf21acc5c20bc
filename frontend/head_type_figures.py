"""Pure builders for head types (``GET /runs/{id}/heads`` records): one type's score over every
layer and head, and the heads that carry a type (sink, previous-token, duplicate, induction, ...).
Records in, ``go.Figure`` / plain data out; no HTTP, no Dash state."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnscope.frontend.llm_figures import column_label, head_label, head_order
from attnscope.frontend.plot_config import SEQUENTIAL

NOT_SCORES = {"head", "labels", "layer", "head_index", "distance", "kv_head"}
# the types a reader looks for first; the rest of a record's scores follow in their own order
FIRST = ("sink", "induction", "previous", "duplicate", "cls_sink", "sep_sink", "self", "next", "local", "broad")
SCORE_NAMES = {
    "sink": "sink (first position)",
    "induction": "induction (probe)",
    "duplicate": "duplicate token (probe)",
    "previous": "previous token",
    "cls_sink": "CLS sink",
    "sep_sink": "SEP sink",
    "shift": "shift score",
}


def score_names(records: list[dict]) -> list[str]:
    """The score names of the records (``sink``, ``induction``, ...), the usual suspects first."""
    if not records:
        return []
    found = [k for k, v in records[0].items() if k not in NOT_SCORES and isinstance(v, (int, float))]
    return [k for k in FIRST if k in found] + [k for k in found if k not in FIRST]


def label_of(score: str) -> str:
    """The label a head carries when its ``score`` passes the threshold (``cls_sink`` -> ``cls-sink``)."""
    return score.replace("_", "-")


def score_matrix(records: list[dict], score: str, n_layers: int, n_heads: int) -> np.ndarray:
    """``[layer, head]`` of ``score`` (NaN where a record is missing)."""
    out = np.full((n_layers, n_heads), np.nan, dtype=np.float64)
    for r in records:
        if score in r and r[score] is not None:
            out[r["layer"], r["head_index"]] = float(r[score])
    return out


def labelled_heads(records: list[dict], label: str, kv_head_of: list[int] | None = None) -> list[tuple[str, float]]:
    """``[(head label, score)]`` of the heads carrying ``label``, strongest first (the score of the
    same name: ``cls-sink`` reads ``cls_sink``; a shift label like ``previous`` reads ``previous``)."""
    score = label.replace("-", "_")
    found = [r for r in records if label in r["labels"]]
    found.sort(key=lambda r: -float(r.get(score) or 0.0))
    return [(head_label(r["layer"], r["head_index"], kv_head_of), float(r.get(score) or 0.0)) for r in found]


def head_type_figure(
    records: list[dict], score: str, n_layers: int, n_heads: int, kv_head_of: list[int] | None = None
) -> go.Figure:
    """Heatmap of one type's score ``[layer, head]`` (0..1); heads grouped by kv head under
    grouped-query attention; hover names the head and every label it carries."""
    z = score_matrix(records, score, n_layers, n_heads)
    order = head_order(n_heads, kv_head_of)
    labels = {(r["layer"], r["head_index"]): r["labels"] for r in records}
    hover = [
        [f"{head_label(l, h, kv_head_of)}: {', '.join(labels.get((l, h), [])) or 'no type'}" for h in order]
        for l in range(n_layers)
    ]
    cols = [column_label(h, kv_head_of) for h in order]
    fig = go.Figure(
        go.Heatmap(
            z=z[:, order],
            x=list(range(n_heads)),
            y=list(range(n_layers)),
            customdata=hover,
            colorscale=SEQUENTIAL,
            zmin=0,
            zmax=1,
            colorbar={"title": {"text": "score"}},
            hovertemplate="%{customdata}<br>" + score + " %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": f"Head types · {SCORE_NAMES.get(score, score)}"},
        height=min(900, max(320, 20 * n_layers + 150)),
        margin={"l": 60, "r": 20, "t": 50, "b": 80},
        xaxis={"tickmode": "array", "tickvals": list(range(n_heads)), "ticktext": cols, "tickangle": -45},
        yaxis={
            "tickmode": "array",
            "tickvals": list(range(n_layers)),
            "ticktext": [f"L{l}" for l in range(n_layers)],
            "autorange": "reversed",
        },
        plot_bgcolor="white",
    )
    return fig
