"""The controls of how a map is drawn, shared by the pages that draw maps: its colour scaling and
the keys it hides (``sink_hiding``)."""

from __future__ import annotations

from dash import dcc, html

from attnscope.frontend.plot_config import SCALINGS
from attnscope.frontend.sink_hiding import HIDE_LABELS, HIDES

SCALING_LABELS = {"global": "global (0..max)", "row": "per row", "log": "log"}


def scaling_control(control_id: str, value: str = "global") -> html.Div:
    """The colour scaling of a head map: global (the map's 0..max), per row (each query row to its
    own maximum) or log (log10 of the weight)."""
    return html.Div(
        className="inline",
        children=[
            html.Label("Scaling", htmlFor=control_id),
            dcc.RadioItems(
                id=control_id,
                value=value if value in SCALINGS else "global",
                inline=True,
                className="head-checklist",
                options=[{"label": SCALING_LABELS[s], "value": s} for s in SCALINGS],
            ),
        ],
    )


def hide_control(control_id: str, value: str = "none") -> html.Div:
    """Which keys a map hides (its rows renormalised over the rest): nothing, the first token (a
    decoder's attention sink) or the special tokens ([CLS]/[SEP], BOS)."""
    return html.Div(
        className="inline",
        children=[
            html.Label("Hide", htmlFor=control_id),
            dcc.RadioItems(
                id=control_id,
                value=value if value in HIDES else "none",
                inline=True,
                className="head-checklist",
                options=[{"label": HIDE_LABELS[h], "value": h} for h in HIDES],
            ),
        ],
    )
