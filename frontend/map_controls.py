"""The controls of how a map is drawn, shared by the pages that draw maps: its colour scaling and
the keys it hides (``sink_hiding``)."""

from __future__ import annotations

from dash import dcc, html

from attnscope.frontend.plot_config import SCALINGS
from attnscope.frontend.sink_hiding import HIDE_LABELS, HIDES

SCALING_LABELS = {"global": "global (0..max)", "row": "per row", "log": "log"}


def radio_control(label: str, control_id: str, value: str, labels: dict[str, str]) -> html.Div:
    """A labelled row of radio buttons ``control_id``: one per key of ``labels`` (value -> label),
    ``value`` chosen (the first when it is not one of them)."""
    return html.Div(
        className="inline",
        children=[
            html.Label(label, htmlFor=control_id),
            dcc.RadioItems(
                id=control_id,
                value=value if value in labels else next(iter(labels)),
                inline=True,
                className="head-checklist",
                options=[{"label": text, "value": v} for v, text in labels.items()],
            ),
        ],
    )


def scaling_control(control_id: str, value: str = "global") -> html.Div:
    """The colour scaling of a head map: global (the map's 0..max), per row (each query row to its
    own maximum) or log (log10 of the weight)."""
    return radio_control("Scaling", control_id, value, {s: SCALING_LABELS[s] for s in SCALINGS})


def hide_control(control_id: str, value: str = "none") -> html.Div:
    """Which keys a map hides (its rows renormalised over the rest): nothing, the first token (a
    decoder's attention sink) or the special tokens ([CLS]/[SEP], BOS)."""
    return radio_control("Hide", control_id, value, {h: HIDE_LABELS[h] for h in HIDES})
