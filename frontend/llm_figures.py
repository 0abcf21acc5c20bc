"""Pure builders for decoder-LLM runs and model outputs: head labels grouped by key/value head
(grouped-query attention), the model menu grouped by modality and task, the prediction panel
(next tokens, or a classifier's classes), a generation step's attention rows, and causal thumbnails.
Arrays in, ``go.Figure`` / plain data out; no HTTP, no Dash state."""

from __future__ import annotations

import base64

import numpy as np
import plotly.graph_objects as go

from attnscope.frontend.figures import _LUT, _png, downsample
from attnscope.frontend.plot_config import SCALINGS, scale_map, scaling_title
from attnscope.frontend.sink_hiding import hide_note, renormalise
from attnscope.frontend.token_labels import calm_token

MASKED_RGB = (214, 218, 225)  # keys a causal head never sees (the future): grey, not "weight 0"
ACTUAL_COLOR, OTHER_COLOR = "#d9480f", "#2f6fde"
TASK_ORDER = ("embedding", "classification", "causal-lm")
TASK_NAMES = {"embedding": "encoders", "classification": "classifiers", "causal-lm": "causal LMs"}
GROUP_PREFIX = "group:"  # value of a menu's (disabled) group header
STEP_SCALING_NOTES = {"row": "per-row scaling: each head's row to its own maximum", "log": "log10 scaling"}


# ------------------------------------------------------------------ heads and kv groups
def is_grouped(kv_head_of: list[int] | None, n_heads: int) -> bool:
    """Whether query heads share key/value heads (grouped-query attention: fewer kv heads than heads)."""
    return kv_head_of is not None and len(kv_head_of) == n_heads and len(set(kv_head_of)) < n_heads


def head_label(layer: int, head: int, kv_head_of: list[int] | None = None) -> str:
    """``L3H4``; with grouped-query attention ``L3 H4 (kv 1)``, the key/value head it reads."""
    if kv_head_of is not None and is_grouped(kv_head_of, len(kv_head_of)):
        return f"L{layer} H{head} (kv {kv_head_of[head]})"
    return f"L{layer}H{head}"


def head_order(n_heads: int, kv_head_of: list[int] | None = None) -> list[int]:
    """Query heads in display order: grouped by the kv head they share (stable), else ``0..n-1``."""
    if not is_grouped(kv_head_of, n_heads):
        return list(range(n_heads))
    return sorted(range(n_heads), key=lambda h: (kv_head_of[h], h))


def column_label(head: int, kv_head_of: list[int] | None = None) -> str:
    """A head column's label: ``H4``, or ``H4 (kv 1)`` under grouped-query attention."""
    if kv_head_of is not None and is_grouped(kv_head_of, len(kv_head_of)):
        return f"H{head} (kv {kv_head_of[head]})"
    return f"H{head}"


def group_starts(n_heads: int, kv_head_of: list[int] | None = None) -> set[int]:
    """The query heads that open a kv group after the first (where the model view leaves a gap)."""
    return {heads[0] for _, heads in kv_groups(n_heads, kv_head_of)[1:]}


def kv_groups(n_heads: int, kv_head_of: list[int] | None = None) -> list[tuple[int | None, list[int]]]:
    """``[(kv head, [query heads])]`` in display order; one ``(None, all heads)`` group without GQA."""
    if not is_grouped(kv_head_of, n_heads):
        return [(None, list(range(n_heads)))]
    groups: dict[int, list[int]] = {}
    for h in head_order(n_heads, kv_head_of):
        groups.setdefault(kv_head_of[h], []).append(h)
    return list(groups.items())


# ------------------------------------------------------------------ the model menu
def _get(m, key):
    return m.get(key) if isinstance(m, dict) else getattr(m, key)


def model_options(models, modality: str = "text") -> list[dict]:
    """Dropdown options of the ``modality`` models (``ModelPublic`` or dicts), grouped by task under a
    disabled header (``Text · causal LMs``); each model labelled ``name · family · task``."""
    chosen = [m for m in models if _get(m, "modality") == modality]
    tasks = sorted({_get(m, "task") for m in chosen}, key=lambda t: (TASK_ORDER.index(t) if t in TASK_ORDER else 99, t))
    options = []
    for task in tasks:
        header = f"{modality.capitalize()} · {TASK_NAMES.get(task, task)}"
        options.append({"label": f"— {header} —", "value": f"{GROUP_PREFIX}{modality}/{task}", "disabled": True})
        options += [
            {"label": f"{_get(m, 'name')} · {_get(m, 'family')} · {task}", "value": _get(m, "name")}
            for m in chosen
            if _get(m, "task") == task
        ]
    return options


# ------------------------------------------------------------------ prediction panel
def _bars(labels: list[str], values: list[float], colors: list[str], title: str, xtitle: str) -> go.Figure:
    n = len(labels)
    fig = go.Figure(
        go.Bar(
            x=values,
            y=list(range(n)),
            orientation="h",
            marker={"color": colors},
            text=[f"{v:.3f}" for v in values],
            textposition="outside",
            customdata=labels,
            hovertemplate="%{customdata}: %{x:.5f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": title},
        height=max(240, 26 * n + 110),
        margin={"l": 110, "r": 40, "t": 60, "b": 40},
        xaxis={"title": {"text": xtitle}, "range": [0, max(1.0, max(values, default=0) * 1.15)]},
        yaxis={"tickmode": "array", "tickvals": list(range(n)), "ticktext": labels, "autorange": "reversed"},
        plot_bgcolor="white",
        showlegend=False,
    )
    return fig


def next_token_figure(
    top_k: list[dict],
    position: int,
    token: str,
    actual: dict | None = None,
    loss: float | None = None,
) -> go.Figure:
    """The most likely next tokens after ``position`` (``top_k``: ``NextToken`` dicts, best first) as
    bars of probability; the token that actually follows (``actual``: its ``token_id``, ``token``) in
    orange when it is among them, and its loss (nats) in the title."""
    labels = [e["token"] for e in top_k]
    probs = [float(e["prob"]) for e in top_k]
    actual_id = None if actual is None else actual["token_id"]
    colors = [ACTUAL_COLOR if e["token_id"] == actual_id else OTHER_COLOR for e in top_k]
    title = f"Next token after “{token}” (position {position})"
    if actual is not None:
        title += f"<br><sub>actual next: “{actual['token']}”"
        title += f", loss {loss:.3f} nats (p = {np.exp(-loss):.3f})</sub>" if loss is not None else "</sub>"
    else:
        title += "<br><sub>the last position: no actual next token</sub>"
    return _bars(labels, probs, colors, title, "probability")


def class_figure(labels: list[str], probs: list[float], predicted: str | None) -> go.Figure:
    """A classifier's class probabilities, the predicted class in orange."""
    colors = [ACTUAL_COLOR if label == predicted else OTHER_COLOR for label in labels]
    return _bars(list(labels), [float(p) for p in probs], colors, f"Predicted class: {predicted}", "probability")


def actual_next(token_ids: list[int] | None, tokens: list[str], position: int) -> dict | None:
    """The token that follows ``position`` (``{"token_id", "token"}``), or None at the last position."""
    if token_ids is None or position + 1 >= len(token_ids):
        return None
    return {"token_id": int(token_ids[position + 1]), "token": tokens[position + 1]}


POSITION_WINDOW = 128  # a long run's position menu: this many positions either side of the chosen one
POSITION_ANCHOR = 64  # ... and every 64th position, to jump anywhere in two choices


def position_options(tokens: list[str], prompt_tokens: int | None = None, around: int | None = None) -> list[dict]:
    """One option per position, ``4 · ␣is``; generated positions marked ``(generated)``. Beyond
    ``2 * POSITION_WINDOW + 1`` positions only those within ``POSITION_WINDOW`` of ``around`` and
    every ``POSITION_ANCHOR``-th: a 4,096-token menu would be 4,096 options that the dropdown
    indexes for its search on every update (a third of a second of the page's main thread)."""
    n_prompt = len(tokens) if prompt_tokens is None else prompt_tokens
    n = len(tokens)
    shown = range(n)
    if n > 2 * POSITION_WINDOW + 1:
        centre = n_prompt - 1 if around is None else min(max(int(around), 0), n - 1)
        near = range(max(0, centre - POSITION_WINDOW), min(n, centre + POSITION_WINDOW + 1))
        shown = sorted({*near, *range(0, n, POSITION_ANCHOR), n - 1})
    return [{"label": f"{i} · {tokens[i]}" + (" (generated)" if i >= n_prompt else ""), "value": i} for i in shown]


# ------------------------------------------------------------------ generation
def generation_segments(tokens: list[str], prompt_tokens: int, position: int | None) -> list[tuple[str, str]]:
    """``[(token, kind)]`` for the text of a generation: kind ``prompt``, ``generated``, ``current``
    (the token at ``position``, the step shown) or ``later`` (generated after it)."""
    out = []
    for i, t in enumerate(tokens):
        if i < prompt_tokens:
            kind = "prompt"
        elif position is None or i < position:
            kind = "generated"
        else:
            kind = "current" if i == position else "later"
        out.append((t, kind))
    return out


def step_marks(n_steps: int, max_marks: int = 16) -> dict:
    """Slider marks for steps ``1..n_steps``: every step up to ``max_marks``, else about that many."""
    every = max(1, -(-n_steps // max_marks))
    marks = {i: str(i) for i in range(1, n_steps + 1, every)}
    marks[n_steps] = str(n_steps)
    return marks


def generation_step_figure(
    rows: np.ndarray,
    tokens: list[str],
    prompt_tokens: int,
    step: dict,
    index: int,
    n_steps: int,
    layer: int,
    kv_head_of: list[int] | None = None,
    scaling: str = "global",
    hidden: list[int] | tuple[int, ...] = (),
    hide: str = "none",
) -> go.Figure:
    """What one generated token looked at: the attention rows ``[head, key]`` of layer ``layer`` at
    the query that chose it (``step``: a ``GenerationStep`` dict; keys ``0..query``, the prompt and
    the tokens generated before), heads grouped by their kv head (``L3 H4 (kv 1)``); a dashed line
    where the generated prefix starts. ``hidden`` keys (``hide``'s, ``sink_hiding``) are blanked and
    each head's row renormalised over the rest (exact: full resolution); ``scaling`` colours the
    weights (``global``, ``row``: each head's row to its maximum, ``log``); the title states both."""
    rows = np.asarray(rows, dtype=np.float32)
    n_heads, n_keys = rows.shape
    hidden = [h for h in hidden if 0 <= h < n_keys]
    if hidden:
        mass = rows[:, hidden].sum(axis=1)  # [head]: each row's weight on the hidden keys
        rows = renormalise(rows, mass, hidden)
    order = head_order(n_heads, kv_head_of)
    scaling = scaling if scaling in SCALINGS else "global"
    z, colors = scale_map(rows[order], scaling)
    what = scaling_title(scaling)
    ylabels = [head_label(layer, h, kv_head_of) for h in order]
    keys = list(range(n_keys))
    hover = [[f"{ylabels[r]} → {tokens[k]}" for k in keys] for r in range(n_heads)]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=keys,
            y=list(range(n_heads)),
            customdata=hover,
            **colors,
            colorbar={"title": {"text": what}},
            hovertemplate=f"%{{customdata}}<br>{what} %{{z:.5f}}<extra></extra>",
        )
    )
    if prompt_tokens < n_keys:
        fig.add_vline(x=prompt_tokens - 0.5, line={"dash": "dash", "color": "#d9480f", "width": 2})
    for h in group_starts(n_heads, kv_head_of):  # a line between kv groups
        fig.add_hline(y=order.index(h) - 0.5, line={"color": "white", "width": 3})
    prob = step.get("prob")
    p = f" (p = {prob:.3f})" if prob is not None else ""
    query = step["query"]
    drawn = [STEP_SCALING_NOTES[scaling]] if scaling != "global" else []
    drawn += [hide_note(hide, hidden, tokens, pooled=False)] if hidden else []
    title = (
        f"Step {index}/{n_steps}: “{step['token']}”{p} · layer {layer}"
        f"<br><sub>the row of query {query} “{tokens[query]}” over the prompt"
        + (" and the tokens generated before" if query >= prompt_tokens else "")
        + "".join(f"<br>{d}" for d in drawn)
        + "</sub>"
    )
    step_px = 1 if n_keys <= 48 else -(-n_keys // 40)
    ticks = keys[::step_px]
    fig.update_layout(
        title={"text": title},
        height=max(300, 24 * n_heads + 170 + 16 * len(drawn)),
        margin={"l": 110, "r": 20, "t": 70 + 16 * len(drawn), "b": 90},
        xaxis={
            "tickmode": "array",
            "tickvals": ticks,
            "ticktext": [calm_token(tokens[k]) for k in ticks],
            "tickangle": -60,
            "title": {"text": "key (prompt | generated)"},
        },
        yaxis={"tickmode": "array", "tickvals": list(range(n_heads)), "ticktext": ylabels, "autorange": "reversed"},
        plot_bgcolor="white",
    )
    return fig


# ------------------------------------------------------------------ causal thumbnails
def causal_thumbnail_src(matrix: np.ndarray, max_size: int = 64) -> str:
    """A causal head's ``[query, key]`` map as a PNG data URI, scaled to its own maximum, with the
    keys it never sees (above the diagonal) in grey rather than the colour of weight 0."""
    m = np.asarray(matrix, dtype=np.float32)
    small = downsample(m, max_size)
    future = downsample(np.triu(np.ones(m.shape, dtype=np.float32), 1), max_size) >= 1.0
    top = float(np.nanmax(small)) if small.size else 0.0
    idx = np.clip(np.nan_to_num(small / top if top > 0 else small) * 255, 0, 255).astype(np.uint8)
    rgb = _LUT[idx].copy()
    rgb[future | np.isnan(small)] = MASKED_RGB  # the future, and hidden keys (sink_hiding)
    return "data:image/png;base64," + base64.b64encode(_png(rgb)).decode()
