"""The Structure page's progress and Cancel (issue 26 item 3): every panel that reads the run's shared
structure pass shows, while its callback runs, a line with the pass's progress (bands of rows done out
of its total, from ``GET /runs/{id}/structure-pass``, polled once a second while the pass runs), and
the banner a Cancel button that stops the pass (``POST .../structure-pass/cancel``): the waiting
panels then say they were cancelled and the page's Retry computes them again.

The pass polled is that of the run whose maps the panels read (``structure-maps-data``: the run, or
its value-weighted maps' run). ``progress_line(panel)`` is the line a panel holds; ``running(panel)``
the ``running=`` argument its callback takes (the line shown while it runs, hidden when it returns)."""

from __future__ import annotations

from dash import Input, Output, State, callback, dcc, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client
from attnscope.frontend.run_record import stored_run

PANELS = ("shift", "kernel", "heads", "evolution", "importance")  # panels whose figures wait on the pass
POLL_MS = 1000
SHOWN, IDLE = "progress-line", "progress-line idle"


def progress_line(panel: str) -> html.P:
    """The panel's progress line (hidden until its callback runs)."""
    return html.P("computing…", id=f"{panel}-progress", className=IDLE, role="status", **{"aria-live": "polite"})


def running(panel: str) -> list:
    """``running=`` for the callback that fills ``panel``: its progress line shown while it runs."""
    return [(Output(f"{panel}-progress", "className"), SHOWN, IDLE)]


def controls() -> list:
    """The poll timer, the pass's status store and the Cancel button (hidden unless a pass runs)."""
    return [
        dcc.Interval(id="structure-pass-poll", interval=POLL_MS, disabled=True),
        html.Button(
            "Cancel",
            id="structure-cancel",
            n_clicks=0,
            className="small-button hidden",
            title="stop the shared pass the panels below wait on",
        ),
    ]


def describe(state: str, done: int, total: int, waiting: int) -> str:
    """The sentence each waiting panel shows for the pass's status."""
    if state == "running" and total:
        also = f" · {waiting} more request{'s' * (waiting != 1)} waiting on it" if waiting else ""
        return f"the run's shared pass: {done} of {total} bands of rows ({100 * done / total:.0f} %){also}"
    if state == "done":
        return "the shared pass is done; drawing…"
    if state == "cancelled":
        return "the shared pass was cancelled"
    return "waiting for the server…"


@callback(
    Output("structure-pass-poll", "disabled"),
    Output("structure-pass-poll", "n_intervals"),
    Input("structure-maps-data", "data"),
    Input("shift-k", "value"),
)
def arm(data, _k):
    """Poll while a run is shown and a pass may be made (a new run, new offsets)."""
    return stored_run(data) is None, 0


@callback(
    *[Output(f"{p}-progress", "children") for p in PANELS],
    Output("structure-cancel", "className"),
    Output("structure-pass-poll", "disabled", allow_duplicate=True),
    Input("structure-pass-poll", "n_intervals"),
    State("structure-maps-data", "data"),
    *[State(f"{p}-progress", "className") for p in PANELS],
    prevent_initial_call=True,
)
def poll(_n, data, *lines):
    """The pass's status on every waiting panel; polling stops once it is done (or cancelled) and no
    panel waits any more: a long run's evolution and rollout walk the head means after the shared pass
    (``server/structure_pass.py``), and that walk's progress is shown too."""
    run = stored_run(data)
    if run is None:
        return *[no_update] * len(PANELS), "small-button hidden", True
    try:
        st = client().structure_pass(run.id)
    except ApiError as exc:
        return *[f"progress unknown: {exc.detail}"] * len(PANELS), "small-button hidden", True
    text = describe(st.state, st.done, st.total, st.waiting)
    button = "small-button" if st.state == "running" else "small-button hidden"
    waiting = any(line == SHOWN for line in lines)
    return *[text] * len(PANELS), button, st.state == "cancelled" or (st.state == "done" and not waiting)


@callback(
    Output("structure-error", "children", allow_duplicate=True),
    Output("structure-cancel", "className", allow_duplicate=True),
    Input("structure-cancel", "n_clicks"),
    State("structure-maps-data", "data"),
    prevent_initial_call=True,
)
def cancel(clicks, data):
    run = stored_run(data)
    if not clicks or run is None:
        return no_update, no_update
    try:
        client().structure_pass(run.id, cancel=True)
    except ApiError as exc:
        return f"Cancel failed: {exc.detail}", no_update
    return "Cancelled: the panels waiting on the shared pass stop. Press Retry to compute them again.", (
        "small-button hidden"
    )
