"""One plot policy for every page: the Plotly toolbar, image export, and the colour scales.

- ``GRAPH_CONFIG``: the modebar without Plotly's cloud ("Share chart", "Edit in Chart Studio") and
  with its camera button exporting SVG, on every ``dcc.Graph`` of the dashboard (``graph_config``:
  plotly.js 3 shows the cloud button by default); ``graph()`` adds SVG / PNG / CSV / JSON / NPY buttons
  under a figure (``export_bar``), run in the browser by ``assets/attnscope.js`` (no server round
  trip, no inline script).
- Colour scales: ``SEQUENTIAL`` for weights (0 .. max), ``DIVERGING`` for differences (symmetric
  around 0: ``diverging_range``). Maps are drawn with one of ``SCALINGS``: ``global`` (the map's
  own 0..max), ``row`` (each query row divided by its maximum) or ``log`` (log10 of the weight,
  floored at ``LOG_FLOOR``).
- ``message_figure``: an empty figure whose only content is a message (what to do next, or what
  went wrong), wrapped so that a long one is never cut off at the sides.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from dash import ClientsideFunction, Input, Output, dcc, html

SEQUENTIAL = "Blues"  # attention weights, probabilities, scores in [0, max]
DIVERGING = "RdBu_r"  # differences A - B: red above 0, blue below, white at 0
# the one convention for signed values on every page (effects, attributions, evidence, A - B): red is
# positive, blue negative, the two ends of DIVERGING; bars and lines take these, heatmaps DIVERGING
POSITIVE, NEGATIVE = "#b2182b", "#2166ac"
SCALINGS = ("global", "row", "log")
LOG_FLOOR = 1e-4  # log scaling: weights below this are drawn as this (log10 = -4)

GRAPH_CONFIG: dict = {
    "displaylogo": False,
    "showSendToCloud": False,
    "showEditInChartStudio": False,
    "modeBarButtonsToRemove": ["sendDataToCloud", "sendChartToCloud", "editInChartStudio", "lasso2d", "select2d"],
    # the camera button: a vector image (scales in papers); PNG is one click away in the export bar
    "toImageButtonOptions": {"format": "svg", "filename": "attnscope", "scale": 1},
}
EXPORT_FORMATS = ("svg", "png", "csv", "json", "npy")


def graph_config(filename: str) -> dict:
    """``GRAPH_CONFIG`` with the image file named ``filename`` (without extension)."""
    return {**GRAPH_CONFIG, "toImageButtonOptions": {**GRAPH_CONFIG["toImageButtonOptions"], "filename": filename}}


def export_bar(graph_id: str, formats: tuple[str, ...] = EXPORT_FORMATS) -> html.Div:
    """Buttons that save the figure ``graph_id`` as an image (SVG, PNG) or its numbers (CSV, JSON,
    NPY: a heatmap's matrix, or every trace's x/y). Handled in the browser by
    ``attnscope.exportFigure``; ``register_export`` wires them once per app."""
    return html.Div(
        className="export-bar",
        role="group",
        **{"aria-label": f"export {graph_id}"},
        children=[html.Span("Export", className="export-label")]
        + [
            html.Button(
                fmt.upper(),
                id={"type": "fig-export", "graph": graph_id, "fmt": fmt},
                n_clicks=0,
                className="export-button",
                title=f"save this figure as {fmt.upper()}",
                **{"aria-label": f"save {graph_id} as {fmt.upper()}"},
            )
            for fmt in formats
        ]
        + [dcc.Store(id={"type": "fig-export-done", "graph": graph_id})],
    )


def graph(graph_id: str, export: bool = True, loading: bool = True, **graph_kw) -> html.Div:
    """A ``dcc.Graph`` with the shared config (file name = ``graph_id``) and, below it, its export
    bar. ``loading`` wraps the graph in ``dcc.Loading`` (a busy state while its callback runs)."""
    g = dcc.Graph(id=graph_id, config=graph_config(f"attnscope-{graph_id}"), **graph_kw)
    body = dcc.Loading(g, type="dot") if loading else g
    return html.Div([body, export_bar(graph_id)] if export else [body], className="figure-box")


def bare_graph(graph_id: str, loading: bool = True) -> dcc.Graph | dcc.Loading:
    """A ``dcc.Graph`` with the shared config (no cloud, SVG camera) and no export bar, in
    ``dcc.Loading`` unless ``loading`` is False: the measure, vision, census and faithfulness
    figures. Plotly.js 3 shows its "Share chart" (upload to Plotly Cloud) button unless the config
    says ``showSendToCloud: False``, so no figure may be drawn without ``graph_config``."""
    g = dcc.Graph(id=graph_id, config=graph_config(f"attnscope-{graph_id}"))
    return dcc.Loading(g, type="dot") if loading else g


def register_export(app) -> None:
    """The one clientside callback behind every ``export_bar`` (pattern-matching ids)."""
    from dash import ALL, MATCH

    app.clientside_callback(
        ClientsideFunction(namespace="attnscope", function_name="exportFigure"),
        Output({"type": "fig-export-done", "graph": MATCH}, "data"),
        Input({"type": "fig-export", "graph": MATCH, "fmt": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )


def scale_map(weights: np.ndarray, scaling: str = "global") -> tuple[np.ndarray, dict]:
    """``(z, heatmap colour kwargs)`` for a map ``[query, key]`` drawn with ``scaling``.

    ``global``: the weights, 0..max. ``row``: each row divided by its maximum (0..1; an all-zero
    row stays 0). ``log``: log10 of the weights floored at ``LOG_FLOOR`` (``log10(LOG_FLOOR)``..0)."""
    w = np.asarray(weights, dtype=np.float64)
    if scaling == "row":  # NaN cells (hidden keys) stay NaN and do not count
        top = np.nanmax(np.where(np.isnan(w), -np.inf, w), axis=-1, keepdims=True) if w.size else w
        z = np.divide(w, top, out=np.where(np.isnan(w), np.nan, 0.0), where=top > 0)
        return z, {"colorscale": SEQUENTIAL, "zmin": 0.0, "zmax": 1.0}
    if scaling == "log":
        z = np.log10(np.maximum(w, LOG_FLOOR))
        return z, {"colorscale": SEQUENTIAL, "zmin": float(np.log10(LOG_FLOOR)), "zmax": 0.0}
    if scaling != "global":
        raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, not {scaling!r}")
    top = float(np.nanmax(w)) if w.size else 1.0
    return w, {"colorscale": SEQUENTIAL, "zmin": 0.0, "zmax": top if top > 0 else 1.0}


def scaling_title(scaling: str) -> str:
    """The colour bar's title for ``scaling``."""
    return {"global": "weight", "row": "weight / row max", "log": "log10 weight"}[scaling]


def diverging_range(values) -> dict:
    """Heatmap colour kwargs for differences: ``DIVERGING``, symmetric ``[-m, m]`` with ``m`` the
    largest ``|value|`` (1e-12 when all are 0), white at 0."""
    arr = np.asarray(values, dtype=np.float64)
    m = float(np.nanmax(np.abs(arr))) if arr.size and np.isfinite(arr).any() else 0.0
    m = m if m > 0 else 1e-12
    return {"colorscale": DIVERGING, "zmin": -m, "zmax": m}


def wrap_words(text: str, width: int) -> list[str]:
    """``text`` as lines of at most ``width`` characters, broken between words (a longer word
    stands on its own line)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + ([line] if line else [])


def message_figure(message: str, width: int = 60, height: int | None = None) -> go.Figure:
    """An empty figure that says what to do next (or what went wrong), wrapped at ``width``
    characters: a long API message (a 422) was one line cut off on both sides. ``height``: fixed,
    or (None) at least 320 px and taller for a message of many lines."""
    lines = wrap_words(message, width)
    fig = go.Figure()
    fig.update_layout(
        xaxis={"visible": False},
        yaxis={"visible": False},
        height=height if height is not None else max(320, 38 + 22 * len(lines)),
        plot_bgcolor="white",
        annotations=[{"text": "<br>".join(lines), "showarrow": False, "font": {"size": 14, "color": "#555"}}],
    )
    return fig
