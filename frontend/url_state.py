"""Page state in the query string: what a page shows (model, run id, layer, head, options) is read
from ``?key=value`` when the page opens and written back as the user changes it, so reload,
back/forward and a pasted link reopen the same view.

A page declares its parameters once::

    PARAMS = {"run": Param(str), "k": Param(int, default=8, lo=1, hi=64)}

    def layout(**query):                      # Dash Pages passes the query string as keyword arguments
        state, problems = parse_query(query, PARAMS)
        return html.Div([problems_message(problems), url_sync("structure"), ...])

and writes it back from a callback with ``Output("structure-url", "data")`` set to
``query_string(values, PARAMS)``. A clientside function (``assets/attnscope.js``) replaces the
address with ``history.replaceState``: no page reload, no re-render. Unknown keys and values that do
not parse are never an error page: ``parse_query`` drops them, keeps the default and says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from dash import ClientsideFunction, Input, Output, clientside_callback, dcc, html

# a text longer than this is not put into the address (the run id still is)
MAX_TEXT_IN_URL = 2000


@dataclass(frozen=True)
class Param:
    """One query parameter: its type (``str``, ``int``, ``float``, ``bool``), default, allowed
    values (``choices``) or bounds (``lo``/``hi``, inclusive)."""

    kind: type = str
    default: Any = None
    choices: tuple | None = None
    lo: float | None = None
    hi: float | None = None
    max_len: int = MAX_TEXT_IN_URL

    def parse(self, raw: str) -> Any:
        """``raw`` as this parameter's value; ``ValueError`` with a message fit for a user."""
        if self.kind is bool:
            low = raw.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError("must be true or false")
        if self.kind is int:
            try:
                value: Any = int(raw)
            except ValueError:
                raise ValueError("must be a whole number") from None
        elif self.kind is float:
            try:
                value = float(raw)
            except ValueError:
                raise ValueError("must be a number") from None
            if value != value:  # NaN
                raise ValueError("must be a number")
        else:
            value = raw
            if len(value) > self.max_len:
                raise ValueError(f"is longer than {self.max_len} characters")
        if self.choices is not None and value not in self.choices:
            raise ValueError("must be one of " + ", ".join(str(c) for c in self.choices))
        if self.lo is not None and value < self.lo:
            raise ValueError(f"must be at least {self.lo:g}")
        if self.hi is not None and value > self.hi:
            raise ValueError(f"must be at most {self.hi:g}")
        return value


def parse_query(query: dict[str, Any], params: dict[str, Param]) -> tuple[dict[str, Any], list[str]]:
    """``(values, problems)``: every declared parameter's value (the default where the query has none
    or a bad one) and one sentence per key that was unknown or did not parse.

    ``query`` is what Dash Pages passes to ``layout(**query)``; the reserved keys it may add
    (``pathname_``/``search_``) and empty values are ignored."""
    values = {name: p.default for name, p in params.items()}
    problems: list[str] = []
    for key, raw in query.items():
        if key.endswith("_") or raw is None:
            continue
        if isinstance(raw, list):  # ?a=1&a=2: the last one counts
            raw = raw[-1]
        raw = str(raw)
        if key not in params:
            problems.append(f"Unknown address parameter '{key}' ignored (this page reads: {', '.join(params)}).")
            continue
        if raw == "":
            continue
        try:
            values[key] = params[key].parse(raw)
        except ValueError as exc:
            shown = raw if len(raw) <= 40 else raw[:37] + "…"
            default = "" if params[key].default is None else f" (using {params[key].default})"
            problems.append(f"Address parameter {key}='{shown}' {exc}; ignored{default}.")
    return values, problems


def query_string(values: dict[str, Any], params: dict[str, Param]) -> str:
    """``"?a=1&b=x"`` of the declared values that differ from their default (``""`` when none):
    short addresses, and the default stays the default when it changes."""
    pairs = []
    for name, p in params.items():
        value = values.get(name)
        if value is None or value == p.default:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, str) and len(value) > p.max_len:
            continue
        pairs.append((name, value))
    return "?" + urlencode(pairs) if pairs else ""


def problems_message(problems: list[str], page_id: str) -> html.Div:
    """The page's message about its address: empty (hidden) when the address was fine."""
    return html.Div(
        [html.P(p) for p in problems],
        id=f"{page_id}-url-problems",
        className="notice" if problems else "notice empty",
        role="status",
    )


def url_sync(page_id: str) -> html.Div:
    """A store whose ``data`` (a query string, ``"?…"`` or ``""``) becomes the page's address.

    Write it from the page's callbacks (``Output(f"{page_id}-url", "data")``); the clientside
    function ``attnscope.replaceQuery`` puts it into the address bar without reloading."""
    return html.Div([dcc.Store(id=f"{page_id}-url"), dcc.Store(id=f"{page_id}-url-applied")], hidden=True)


def address_parts(page_id: str, state: dict[str, Any], problems: list[str]) -> list:
    """What every page's layout holds about its address: the parsed values (``{page_id}-query``,
    the page's callbacks read them), the store that writes the address (``url_sync``) and the
    message about what in it was not usable (``problems_message``)."""
    return [dcc.Store(id=f"{page_id}-query", data=state), url_sync(page_id), problems_message(problems, page_id)]


def register_url_sync(page_id: str) -> None:
    """Register the clientside callback that copies ``{page_id}-url`` into the address bar (call once
    per page, at import time, beside the page's callbacks)."""
    clientside_callback(
        ClientsideFunction(namespace="attnscope", function_name="replaceQuery"),
        Output(f"{page_id}-url-applied", "data"),
        Input(f"{page_id}-url", "data"),
        prevent_initial_call=True,
    )
