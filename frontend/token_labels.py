"""Token labels drawn calmly: the marks a tokenizer adds (WordPiece's ``##`` continuation prefix, the
visible whitespace glyphs ``␣ ↵ ⇥ ␍`` that ``models/tokens.py`` puts for byte-level BPE and
SentencePiece) in light grey, the word itself in the figure's ink. Plotly's label markup (``<span
style>``) does it in tick labels and text traces; a label without marks is returned unchanged."""

from __future__ import annotations

import html
import re

MARK_COLOUR = "#9aa3ad"
_MARKS = re.compile(r"^##|[␣↵⇥␍]")


def _mark(text: str) -> str:
    return f'<span style="color:{MARK_COLOUR}">{text}</span>'


def calm_token(label: str) -> str:
    """``"##ing"`` -> the ``##`` grey, ``ing`` plain; ``"␣capital"`` -> the ``␣`` grey. The rest of a
    marked label is HTML-escaped (``<`` of a special token stays a character)."""
    if not _MARKS.search(label):
        return label
    out, last = [], 0
    for m in _MARKS.finditer(label):
        out.append(html.escape(label[last : m.start()], quote=False))
        out.append(_mark(m.group()))
        last = m.end()
    out.append(html.escape(label[last:], quote=False))
    return "".join(out)


def calm_tokens(labels: list[str]) -> list[str]:
    return [calm_token(t) for t in labels]


MOST_TICKS = 48  # token labels drawn on one axis at most


def token_ticks(labels: list[str], most: int = MOST_TICKS) -> dict:
    """A Plotly axis over token positions ``0 .. len(labels) - 1``: every token labelled up to ``most``
    positions, beyond that every k-th (hover still names each). Plotly measures every tick label's box
    on each draw to fit the margins: 1,023 labels on Structure's rollout bars took 51 s of the
    browser's main thread (``bench/dashboard.py --structure 1024``); 48 take milliseconds."""
    n = len(labels)
    step = 1 if n <= most else -(-n // most)
    ticks = list(range(0, n, step))
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [calm_token(labels[i]) for i in ticks]}
