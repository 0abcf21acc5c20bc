"""The token counter under a page's text box: "37 / 512 tokens" against the chosen model's limit,
before Run, with a warning when the text is over it.

``token_counter(prefix)`` is the layout part (the count, and the two stores of the debounce);
``register_token_counter(prefix, text_id, model_id)`` wires it: the browser waits until typing
pauses for ``DEBOUNCE_MS`` (``attnscope.debounceTokens`` in ``assets/attnscope.js``), then the
server asks the API (``POST /models/{name}/tokenize``) once for the text and model of that moment.
"""

from __future__ import annotations

from dash import ClientsideFunction, Input, Output, State, callback, clientside_callback, dcc, html

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client
from attnscope.server.schemas import TokenCountPublic

DEBOUNCE_MS = 400


def token_counter(prefix: str) -> html.Div:
    """``{prefix}-token-count`` (the count, announced politely) and its debounce stores."""
    return html.Div(
        className="token-counter",
        children=[
            html.Div(id=f"{prefix}-token-count", className="hint token-count", **{"aria-live": "polite"}),
            dcc.Store(id=f"{prefix}-token-text"),  # {model, text} once typing has paused
            dcc.Store(id=f"{prefix}-token-kick", data=DEBOUNCE_MS),
        ],
    )


def count_message(count: TokenCountPublic) -> tuple[str, str]:
    """``(text, className)`` of the counter for ``count``."""
    n, limit = count.n_tokens, count.max_tokens
    if not count.over_limit:
        return f"{n} / {limit} tokens", "hint token-count"
    return (
        f"{n} / {limit} tokens: over {count.model}'s limit, Run will refuse this text "
        f"(shorten it by about {n - limit} tokens)",
        "hint token-count over",
    )


def register_token_counter(prefix: str, text_id: str, model_id: str) -> None:
    """The callbacks of ``token_counter(prefix)`` for the text box ``text_id`` and the model
    dropdown ``model_id``."""
    clientside_callback(
        ClientsideFunction(namespace="attnscope", function_name="debounceTokens"),
        Output(f"{prefix}-token-kick", "data"),
        Input(text_id, "value"),
        Input(model_id, "value"),
        State(f"{prefix}-token-text", "id"),
        State(f"{prefix}-token-kick", "data"),
    )

    @callback(
        Output(f"{prefix}-token-count", "children"),
        Output(f"{prefix}-token-count", "className"),
        Input(f"{prefix}-token-text", "data"),
        prevent_initial_call=True,
    )
    def show_count(wanted):
        model, text = (wanted or {}).get("model"), (wanted or {}).get("text") or ""
        if not model or not text.strip():
            return "", "hint token-count"
        try:
            count = client().count_tokens(model, text)
        except ApiError as exc:
            if exc.status == 422:  # a vision model, or a text the API cannot take: Run says why
                return "", "hint token-count"
            return f"Tokens not counted: {exc.detail}", "hint token-count"
        return count_message(count)
