"""The Structure page's map kind (attention weights | value-weighted, Kobayashi et al. 2020; in the
address as ``map``): the panels that analyse the maps themselves (shift heads and their kernels, the
evolution across layers, rollout and flow) read the run whose maps are the value-weighted maps when
asked (``structure-maps-data``: that run's record, the API makes it once); head types (measured on a
probe input, not on the run's maps) and the causal effects (ablations of the model) read the run itself."""

from __future__ import annotations

from dash import Input, Output, callback, html

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client
from attnscope.frontend.pages.explore_writes import map_run
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.writes_layout import map_kind_control

READ_BY = "shift heads, kernels, evolution and rollout/flow read them; head types and causal effects read the weights"


def controls(kind: str) -> list:
    """The map kind radio and the line that says what it changes."""
    return [
        map_kind_control(kind, "structure-map-kind"),
        html.Span(id="structure-map-note", className="hint", role="status"),
    ]


@callback(
    Output("structure-maps-data", "data"),
    Output("structure-map-note", "children"),
    Input("structure-run-data", "data"),
    Input("structure-map-kind", "value"),
)
def maps_run(data, kind):
    """The run whose maps the map panels analyse: the run itself, or its value-weighted maps' run."""
    run = stored_run(data)
    if not run or kind != "value-weighted":
        return data, ""
    try:
        shown = map_run(client(), run, kind)
    except ApiError as exc:
        return data, f"Attention weights shown: no value-weighted maps for this run ({exc.detail})."
    return shown.to_store(), f"Value-weighted maps (rows normalised to sum to 1): {READ_BY}."
