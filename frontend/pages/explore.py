"""Explore: run a text through a model and browse every layer and head.

Address: ``/?run=ID&model=M&text=T&layer=0&head=L0H2&scaling=row&qk_query=5&qk_key=2&qk_mode=k&map=value-weighted
&lens_k=5&lens_target=+Paris`` (reload,
back/forward and a pasted link reopen the same run, layer, head and QK view; a run the API forgot is made
again from ``model`` + ``text``)."""

import dash

from attnscope.frontend.layout import explore_page
from attnscope.frontend.pages import (  # noqa: F401  (callbacks)
    explore_address,
    explore_callbacks,
    explore_lens,
    explore_llm,
    explore_qk,
    explore_tokens,
    explore_writes,
)
from attnscope.frontend.pages.explore_address import PARAMS
from attnscope.frontend.url_state import parse_query

dash.register_page(__name__, path="/", name="Explore", order=0, title="attnscope · explore")


def layout(**query):
    state, problems = parse_query(query, PARAMS)
    return explore_page(state, problems)
