"""A head's direct logit attribution split over its source tokens, as coloured text (pure: the
attribution answer's ``splits`` in, Dash components out). The head's output is a weighted sum over
keys, so its part of the logit is exactly the sum of what each source position sent
(``docs/methods/direct-logit-attribution.md``); each token's background is that amount, red for
towards the target, blue against, the strongest the deepest. A long text shows the windows around
the strongest sources."""

from __future__ import annotations

import numpy as np
from dash import html

from attnscope.frontend.plot_config import NEGATIVE, POSITIVE
from attnscope.frontend.writes_figures import shown_token

ALL_UP_TO = 400  # sources shown whole up to this many; beyond, windows around the strongest
STRONGEST = 16  # windows kept in a long text
CONTEXT = 4  # tokens either side of a strong source
MIX = 0.55  # the strongest colour's share over white (black text stays above 4.5:1 contrast)
LISTED = 3  # sources named in the summary line


def _hex(colour: str) -> np.ndarray:
    return np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)


def share_colour(value: float, scale: float) -> str:
    """The background of a source that sent ``value`` when the strongest sent ``scale`` (> 0)."""
    if scale <= 0 or value == 0:
        return "rgb(255,255,255)"
    t = MIX * min(1.0, abs(value) / scale)
    c = (1 - t) * np.full(3, 255.0) + t * _hex(POSITIVE if value > 0 else NEGATIVE)
    return "rgb({},{},{})".format(*(int(round(v)) for v in c))


def shown_positions(sources, limit: int = ALL_UP_TO, strongest: int = STRONGEST, context: int = CONTEXT) -> list:
    """The positions to draw, in order, ``None`` where a gap is left out: every one up to ``limit``
    sources, else the ``strongest`` by ``|value|`` with ``context`` neighbours either side."""
    s = np.abs(np.asarray(sources, dtype=float))
    n = s.size
    if n <= limit:
        return list(range(n))
    keep = set()
    for j in np.argsort(-s, kind="stable")[:strongest]:
        keep.update(range(max(0, int(j) - context), min(n, int(j) + context + 1)))
    out, last = [], -1
    for j in sorted(keep):
        if j != last + 1:
            out.append(None)
        out.append(j)
        last = j
    if last != n - 1:
        out.append(None)
    return out


def split_summary(label: str, part: float, tokens: list[str], sources) -> str:
    """``L23H4 writes +2.66 into the logit; most from position 3 ␣France +2.10, …``."""
    s = np.asarray(sources, dtype=float)
    top = np.argsort(-np.abs(s), kind="stable")[:LISTED]
    named = ", ".join(f"position {j} {shown_token(tokens[j])} {s[j]:+.3f}" for j in top)
    return f"{label} writes {part:+.3f} into the logit; most from {named}"


def split_text(label: str, part: float, tokens: list[str], sources) -> list:
    """The summary line and the coloured text of one head's split (``sources [key]``, summing to
    ``part``; ``tokens`` the source tokens ``0..position``)."""
    s = np.asarray(sources, dtype=float)
    scale = float(np.abs(s).max()) if s.size else 0.0
    spans = []
    for j in shown_positions(s):
        if j is None:
            spans.append(html.Span("…", className="gap"))
            continue
        spans.append(
            html.Span(
                shown_token(tokens[j]),
                className="src",
                title=f"position {j}: {s[j]:+.4f}",
                style={"backgroundColor": share_colour(float(s[j]), scale)},
                **{"data-pos": j, "data-value": f"{s[j]:.6g}"},
            )
        )
    return [html.P(split_summary(label, part, tokens, s), className="dla-split-summary"), html.Div(spans)]
