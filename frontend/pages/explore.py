"""Explore: run a text through a model and browse every layer and head."""

import dash

from attnscope.frontend.layout import explore_page
from attnscope.frontend.pages import explore_callbacks, explore_llm  # noqa: F401  (register this page's callbacks)

dash.register_page(__name__, path="/", name="Explore", order=0, title="attnscope · explore")

layout = explore_page
