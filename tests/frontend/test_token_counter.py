"""The token counter's message under a text box (the count itself: tests/server/test_routes_tokenize.py)."""

from attnscope.frontend.token_counter import count_message
from attnscope.server.schemas import TokenCountPublic


def test_the_count_against_the_limit_and_the_warning_over_it():
    ok = TokenCountPublic(model="minilm", n_tokens=37, max_tokens=512, over_limit=False)
    assert count_message(ok) == ("37 / 512 tokens", "hint token-count")
    over = TokenCountPublic(model="minilm", n_tokens=602, max_tokens=512, over_limit=True)
    text, cls = count_message(over)
    assert text.startswith("602 / 512 tokens") and "about 90 tokens" in text and cls.endswith(" over")
