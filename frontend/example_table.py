"""The examples of a data-set result, a page at a time, each with a link that opens it in Explore
(issue 26 item 11, LIT's datapoint browsing): Census (census and probe), Faithfulness and the
Interventions data-set panel show one.

A page adds ``examples_panel(prefix)`` to its layout, calls ``register_examples_table(prefix)`` once,
and writes ``example_source(...)`` into ``{prefix}-examples-source`` when a result arrives. The table
asks the API for the ``PAGE`` examples it shows (``GET /datasets/{name}/examples/{key}``: the text is
never part of a job result) and links each to Explore, ``/?model=M&text=T`` (``&example=DATASET:ID``
in place of a text too long for an address): Explore runs the text on the result's model, so the link
reproduces the run; there, the text box's edit links to Compare (the
counterfactual, ``stale_note.counterfactual_link``)."""

from __future__ import annotations

from dash import Input, Output, State, callback, ctx, dcc, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client, describe_error
from attnscope.frontend.run_state import RUN_PARAMS
from attnscope.frontend.url_state import MAX_TEXT_IN_URL, query_string

PAGE = 10  # examples fetched and shown at a time
EXCERPT = 120  # characters of each text shown in the table


def example_source(
    model: str,
    dataset: str,
    keys: list,
    split: str | None = None,
    allow_offensive: bool = False,
    values: list | None = None,
    value_name: str | None = None,
) -> dict:
    """What ``{prefix}-examples-source`` holds: the result's ``model``, ``dataset`` and ``split``, its
    examples' ``keys`` (ids, or indices in the split) in order, and optionally one number per example
    (``values``, named ``value_name``) shown beside it."""
    return {
        "model": model,
        "dataset": dataset,
        "split": split,
        "keys": [str(k) for k in keys],
        "allow_offensive": bool(allow_offensive),
        "values": values,
        "value_name": value_name,
    }


def explore_href(model: str, item) -> str:
    """Explore's address that runs the example ``item`` (a ``DataSetExamplePublic``) on ``model``: with its
    text, or, when that is too long for an address, with ``example=DATASET:ID`` (Explore reads the text)."""
    if len(item.text) <= MAX_TEXT_IN_URL:
        return "/" + query_string({"model": model, "text": item.text}, RUN_PARAMS)
    return "/" + query_string({"model": model, "example": f"{item.dataset}:{item.id}"}, RUN_PARAMS)


def examples_panel(prefix: str) -> html.Section:
    """A page's panel of the result's examples (ids ``{prefix}-examples*``)."""
    return html.Section(className="panel", children=examples_block(prefix, html.H2))


def examples_block(prefix: str, heading=html.H3) -> list:
    """The examples table's parts, under ``heading`` (for a panel that holds it among others)."""
    return [
        heading("Examples", id=f"{prefix}-examples-title"),
        html.P(
            "The result's examples, ten at a time: open any in Explore (the link runs its text on the "
            "result's model); there, edit the text and compare the two.",
            className="hint",
        ),
        dcc.Store(id=f"{prefix}-examples-source"),
        dcc.Store(id=f"{prefix}-examples-page", data=0),
        html.Div(
            className="inline",
            children=[
                html.Button("Previous", id=f"{prefix}-examples-prev", n_clicks=0, className="small-button"),
                html.Button("Next", id=f"{prefix}-examples-next", n_clicks=0, className="small-button"),
                html.Span(id=f"{prefix}-examples-status", className="hint", role="status"),
            ],
        ),
        html.Div(id=f"{prefix}-examples", **{"aria-labelledby": f"{prefix}-examples-title"}),
    ]


def _excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1].rstrip() + "…"


def _value(v) -> str:
    return "" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def examples_table(source: dict, page: int, fetched: list) -> html.Table:
    """Rows of the examples on ``page``: ``fetched`` holds, per key of that page, the API's
    ``DataSetExamplePublic`` or the error that stands in for it."""
    value_name = source.get("value_name")
    head = ["example", "label", "text"] + ([value_name] if value_name else []) + ["open"]
    rows = []
    start = page * PAGE
    for i, item in enumerate(fetched):
        key = source["keys"][start + i]
        if isinstance(item, str):  # the API's refusal for this one
            cells = [html.Td(key), html.Td(""), html.Td(item, className="error")]
            cells += [html.Td("")] * bool(value_name) + [html.Td("")]
        else:
            link = html.A(
                "open in Explore",
                href=explore_href(source["model"], item),
                className="example-open",
                **{"aria-label": f"open example {item.id} in Explore"},
            )
            if source.get("allow_offensive"):  # the opt-in page promises tables without the posts
                text = html.Td("(offensive text: shown only when opened)", className="hint")
            else:
                text = html.Td(_excerpt(item.text), title=item.text)
            cells = [html.Td(item.id), html.Td(item.label_name), text]
            if value_name:
                cells.append(html.Td(_value((source.get("values") or [None] * (start + i + 1))[start + i])))
            cells.append(html.Td(link))
        rows.append(html.Tr(cells))
    return html.Table(
        className="workspace-table examples-table",
        children=[html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(rows)],
    )


def register_examples_table(prefix: str) -> None:
    """Fill ``{prefix}-examples`` from ``{prefix}-examples-source``: page 0 for a new source, the next or
    previous page on the buttons."""

    @callback(
        Output(f"{prefix}-examples", "children"),
        Output(f"{prefix}-examples-status", "children"),
        Output(f"{prefix}-examples-page", "data"),
        Output(f"{prefix}-examples-prev", "disabled"),
        Output(f"{prefix}-examples-next", "disabled"),
        Input(f"{prefix}-examples-source", "data"),
        Input(f"{prefix}-examples-prev", "n_clicks"),
        Input(f"{prefix}-examples-next", "n_clicks"),
        State(f"{prefix}-examples-page", "data"),
    )
    def show_examples(source, _prev, _next, page):
        if not source or not source.get("keys"):
            return [], "No result with examples yet." if not source else "This result names no examples.", 0, True, True
        total = len(source["keys"])
        last = (total - 1) // PAGE
        trigger = ctx.triggered_id
        page = 0 if trigger == f"{prefix}-examples-source" or page is None else int(page)
        page = max(0, min(last, page + (trigger == f"{prefix}-examples-next") - (trigger == f"{prefix}-examples-prev")))
        api, fetched = client(), []
        for key in source["keys"][page * PAGE : (page + 1) * PAGE]:
            try:
                fetched.append(
                    api.dataset_example(source["dataset"], key, source.get("split"), source.get("allow_offensive"))
                )
            except ApiError as exc:
                if exc.status == 503 and not fetched:  # the API or the data set is away: say it once
                    return no_update, describe_error(exc, "The examples could not be loaded"), page, True, True
                fetched.append(exc.detail)
        stop = min(total, (page + 1) * PAGE)
        status = f"examples {page * PAGE + 1}–{stop} of {total} ({source['dataset']}, model {source['model']})"
        return examples_table(source, page, fetched), status, page, page == 0, page >= last
