"""Explore's token-centred view (issue 26 item 5, as CircuitsVis' coloured tokens and exBERT): the
run's text as tokens, each coloured by its weight for one token of the text, the *focus*: the
weights the focus gives every key (``from``: what it reads) or that every query gives it (``to``: who
reads it), averaged over the head view's checked heads of its layer, for the map kind shown
(attention or value-weighted). Hovering or focusing a token shows it; a click (Enter, Space) locks
it, so the view stays while the pointer moves; the locked token is in the address (``token``,
``token_dir``). The tokens are drawn in the browser (``assets/attention_views.js``) from the run's
tokens and one list of weights: a 4,096-token text is one DOM update, not 4,096 Dash components.

Layout and the pure parts here; the callback is in ``pages/explore_tokens.py``."""

from __future__ import annotations

import numpy as np
from dash import dcc, html

from attnscope.frontend.map_controls import radio_control
from attnscope.frontend.page_common import panel
from attnscope.frontend.sink_hiding import renormalise

DIRECTIONS = ("from", "to")
DIRECTION_LABELS = {"from": "from the token (what it reads)", "to": "to the token (who reads it)"}
TOP_N = 5  # tokens named in the spoken summary


def token_view(state: dict | None = None) -> html.Section:
    """The panel: the direction switch, the tokens (filled in the browser), a summary of the
    strongest ones (read by screen readers when it changes)."""
    state = state or {}
    token = state.get("token")
    direction = state.get("token_dir") if state.get("token_dir") in DIRECTIONS else "from"
    return panel(
        "Token view",
        (
            "Each token coloured by its weight for the focused token, for the head view's layer and checked "
            "heads (their mean). Hover or focus a token to see it; click it (or press Enter) to lock the view; "
            "click it again or press Escape to unlock. Arrow keys move between tokens."
        ),
        radio_control("Direction", "token-dir", direction, DIRECTION_LABELS),
        dcc.Store(id="token-focus", data={"query": token, "locked": True} if token is not None else None),
        dcc.Store(id="token-weights"),
        html.Div(
            id="token-text",
            className="token-text",
            role="group",
            **{"aria-label": "the run's tokens: focus one to see its weights, Enter to lock"},
        ),
        html.P(id="token-summary", className="hint", **{"aria-live": "polite"}),
    )


def focus_weights(
    rows: list[np.ndarray], direction: str, focus: int, hidden: list[int]
) -> tuple[np.ndarray, list[int]]:
    """``(weights [n], blank)``: the mean over heads of ``rows`` (each head's ``[n]`` weights of the
    focus: its row for ``from``, its column for ``to``) with the ``hidden`` keys blank (NaN). For
    ``from`` the row is renormalised over the keys that remain (``sink_hiding``); for ``to`` a hidden
    focus has nothing to show (every entry blank) and hidden queries stay in (they read it)."""
    w = np.mean(np.stack([np.asarray(r, dtype=np.float64) for r in rows]), axis=0)
    if not hidden:
        return w, []
    if direction == "from":
        return renormalise(w[None], w[hidden].sum()[None], hidden)[0].astype(np.float64), list(hidden)
    if focus in hidden:
        return np.full_like(w, np.nan), list(range(len(w)))
    return w, []


def summary(tokens: list[str], weights: np.ndarray, focus: int, direction: str, about: str, n: int = TOP_N) -> str:
    """One sentence naming the focus and its ``n`` strongest tokens with their weights."""
    finite = np.where(np.isfinite(weights), weights, -np.inf)
    top = [int(i) for i in np.argsort(-finite, kind="stable")[:n] if np.isfinite(weights[i]) and weights[i] > 0]
    verb = "reads most" if direction == "from" else "is read most by"
    named = ", ".join(f"{tokens[i]}@{i} ({weights[i]:.3f})" for i in top) or "nothing"
    return f"{tokens[focus]}@{focus} {verb}: {named} · {about}"
