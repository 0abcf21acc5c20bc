"""The token-centred view's callback (``frontend/token_view.py``): the focused token's weights for
the head view's layer and checked heads, read from the API (one row, or one column, of each head),
as one list the browser paints onto the tokens (``assets/attention_views.js``)."""

from __future__ import annotations

from dash import ClientsideFunction, Input, Output, callback, clientside_callback

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client
from attnscope.frontend.pages.explore_views import FETCH
from attnscope.frontend.pages.explore_writes import map_run
from attnscope.frontend.run_record import stored_run
from attnscope.frontend.sink_hiding import HIDES, hidden_positions, hide_note
from attnscope.frontend.token_view import DIRECTIONS, focus_weights, summary


@callback(
    Output("token-weights", "data"),
    Input("token-focus", "data"),
    Input("token-dir", "value"),
    Input("layer-dropdown", "value"),
    Input("head-checklist", "value"),
    Input("explore-run-data", "data"),
    Input("map-kind", "value"),
    Input("head-hide", "value"),
)
def read_token_weights(focus, direction, layer, heads, data, kind, hide):
    """``{run, focus, locked, weights (None where blank), summary}`` for the browser to paint; without
    a focus (or a layer and heads) only the run, so the tokens are drawn plain."""
    run = stored_run(data)
    if not run:
        return None
    plain = {"run": run.id, "focus": None, "locked": False, "weights": None, "summary": ""}
    query = (focus or {}).get("query")
    if query is None or layer is None or not heads or not 0 <= int(query) < run.n_tokens:
        return plain
    query, n = int(query), run.n_tokens
    direction = direction if direction in DIRECTIONS else "from"
    hidden = hidden_positions(hide if hide in HIDES else "none", n, run.special)
    api = client()
    try:
        shown = map_run(api, run, kind)
        window = {"rows": (query, query + 1)} if direction == "from" else {"cols": (query, query + 1)}
        reads = [FETCH.submit(api.attention, shown.id, layer, h, **window) for h in sorted(heads)]
        rows = [f.result().reshape(-1) for f in reads]  # each [n]: the focus's row, or its column
    except ApiError as exc:
        return {**plain, "summary": f"The token view could not be read: {exc}"}
    weights, _ = focus_weights(rows, direction, query, hidden)
    names = ", ".join(f"H{h}" for h in sorted(heads))
    about = f"layer {layer}, {'head' if len(heads) == 1 else 'mean of heads'} {names}"
    about += " · value-weighted" if shown is not run else ""
    note = hide_note(hide, hidden, run.tokens, pooled=False)
    about += f" · {note}" if note else ""
    return {
        "run": run.id,
        "focus": query,
        "locked": bool((focus or {}).get("locked")),
        "direction": direction,
        "weights": [None if w != w else round(float(w), 5) for w in weights],  # NaN (hidden): None
        "summary": summary(run.tokens, weights, query, direction, about),
    }


# the tokens drawn and coloured in the browser; a hover, focus or click sets token-focus from there
clientside_callback(
    ClientsideFunction(namespace="attnscope_views", function_name="tokenView"),
    Output("token-summary", "children"),
    Input("token-weights", "data"),
    Input("explore-run-data", "data"),
)
