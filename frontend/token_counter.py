"""The token counter under a page's text box: "37 / 512 tokens" against the chosen model's limit,
before Run ("up to 4096 tokens" while the box is empty), with a warning when the text is over it and
a button that cuts the text to the longest run of words that fits (``fit_prefix``).

``token_counter(prefix)`` is the layout part (the count, and the two stores of the debounce);
``register_token_counter(prefix, text_id, model_id)`` wires it: the browser waits until typing
pauses for ``DEBOUNCE_MS`` (``attnscope.debounceTokens`` in ``assets/attnscope.js``), then the
server asks the API (``POST /models/{name}/tokenize``) once for the text and model of that moment.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dash import ClientsideFunction, Input, Output, State, callback, clientside_callback, dcc, html, no_update

from attnscope.frontend.api_client import ApiError
from attnscope.frontend.page_common import client
from attnscope.server.schemas import ModelPublic, TokenCountPublic

DEBOUNCE_MS = 400


def token_counter(prefix: str) -> html.Div:
    """``{prefix}-token-count`` (the count, announced politely) and its debounce stores."""
    return html.Div(
        className="token-counter",
        children=[
            html.Div(id=f"{prefix}-token-count", className="hint token-count", **{"aria-live": "polite"}),
            html.Button(
                "Cut to fit",
                id=f"{prefix}-token-cut",
                n_clicks=0,
                className="small-button hidden",
                title="keep the text's first words, as many as fit the model's limit",
            ),
            dcc.Store(id=f"{prefix}-token-text"),  # {model, text} once typing has paused
            dcc.Store(id=f"{prefix}-token-kick", data=DEBOUNCE_MS),
        ],
    )


def count_message(count: TokenCountPublic, model: ModelPublic | None = None) -> tuple[str, str]:
    """``(text, className)`` of the counter for ``count``; ``model`` (from ``GET /models``) says
    why the limit is what it is when the text is over it."""
    n, limit = count.n_tokens, count.max_tokens
    if not count.over_limit:
        return f"{n} / {limit} tokens", "hint token-count"
    why = ""
    if model is not None and model.context is not None:  # a causal LM: the server's limit, not the model's
        why = (
            f" (this server takes {limit} of its {model.context}-token context: ATTNSCOPE_MAX_CAUSAL_TOKENS)"
            if model.context > limit
            else f" (its context is {model.context} tokens)"
        )
    elif model is not None:
        why = f" (its position embeddings stop at {limit})"
    return (
        f"{n} / {limit} tokens: over {count.model}'s limit{why}, Run will refuse this text. "
        f"Shorten it by about {n - limit} tokens, or cut it to its first words that fit",
        "hint token-count over",
    )


def limit_message(model: ModelPublic) -> str:
    """The counter for an empty text box: the limit, before anything is typed."""
    return f"up to {model.max_tokens} tokens for {model.name}"


def fit_prefix(text: str, limit: int, count: Callable[[str], int]) -> str:
    """The longest prefix of ``text`` ending at a word's end whose ``count`` is at most ``limit``
    ("" when not even the first word fits): a binary search over word ends, ``log2(words) + 1``
    calls of ``count`` (the API's tokenizer: special tokens included, so the cut text runs as is).
    ``count`` must not shrink as a prefix grows (true of a tokenizer's count of word prefixes)."""
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    if ends and count(text) <= limit:
        return text
    lo, hi = 0, max(len(ends) - 1, 0)  # the whole text does not fit: at most len - 1 words do
    while lo < hi:  # invariant: a prefix of lo words fits (0 words: the empty text)
        mid = (lo + hi + 1) // 2
        if count(text[: ends[mid - 1]]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return text[: ends[lo - 1]] if lo else ""


def _model(name: str) -> ModelPublic | None:
    try:
        return next((m for m in client().models().models if m.name == name), None)
    except ApiError:
        return None


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
        Output(f"{prefix}-token-cut", "className"),
        Output(f"{prefix}-token-cut", "children"),
        Input(f"{prefix}-token-text", "data"),
        prevent_initial_call=True,
    )
    def show_count(wanted):
        model, text = (wanted or {}).get("model"), (wanted or {}).get("text") or ""
        hidden = ("small-button hidden", "Cut to fit")
        if not model:
            return "", "hint token-count", *hidden
        if not text.strip():
            spec = _model(model)
            return (limit_message(spec) if spec else ""), "hint token-count", *hidden
        try:
            count = client().count_tokens(model, text)
        except ApiError as exc:
            if exc.status == 422:  # a vision model, or a text the API cannot take: Run says why
                return "", "hint token-count", *hidden
            return f"Tokens not counted: {exc.detail}", "hint token-count", *hidden
        if not count.over_limit:
            return *count_message(count), *hidden
        return *count_message(count, _model(model)), "small-button", f"Cut to the first {count.max_tokens} tokens"

    @callback(
        Output(text_id, "value", allow_duplicate=True),
        Input(f"{prefix}-token-cut", "n_clicks"),
        State(text_id, "value"),
        State(model_id, "value"),
        prevent_initial_call=True,
    )
    def cut_text(n_clicks, text, model):
        if not n_clicks or not text or not model:
            return no_update
        try:
            limit = client().count_tokens(model, text).max_tokens
            return fit_prefix(text, limit, lambda t: client().count_tokens(model, t).n_tokens)
        except ApiError:
            return no_update
