"""The token counter's message under a text box (the count itself: tests/server/test_routes_tokenize.py)."""

import pytest

from attnscope.frontend.token_counter import count_message, fit_prefix, limit_message
from attnscope.server.schemas import ModelPublic, TokenCountPublic


def test_the_count_against_the_limit_and_the_warning_over_it():
    ok = TokenCountPublic(model="minilm", n_tokens=37, max_tokens=512, over_limit=False)
    assert count_message(ok) == ("37 / 512 tokens", "hint token-count")
    over = TokenCountPublic(model="minilm", n_tokens=602, max_tokens=512, over_limit=True)
    text, cls = count_message(over)
    assert text.startswith("602 / 512 tokens") and "about 90 tokens" in text and cls.endswith(" over")


def test_over_the_limit_says_why_for_an_encoder_and_for_a_causal_lm():
    over = TokenCountPublic(model="minilm", n_tokens=602, max_tokens=512, over_limit=True)
    enc = ModelPublic(name="minilm", family="bert", modality="text", source="package", task="x", max_tokens=512)
    assert "position embeddings stop at 512" in count_message(over, enc)[0]
    assert "cut it to its first words that fit" in count_message(over, enc)[0]
    llm = enc.model_copy(update={"name": "smollm2", "max_tokens": 4096, "context": 8192})
    long = TokenCountPublic(model="smollm2", n_tokens=5000, max_tokens=4096, over_limit=True)
    assert "4096 of its 8192-token context: ATTNSCOPE_MAX_CAUSAL_TOKENS" in count_message(long, llm)[0]
    assert limit_message(llm) == "up to 4096 tokens for smollm2"


def _words(text: str) -> int:
    """A tokenizer with closed-form counts: one token per word plus two specials."""
    return len(text.split()) + 2


def test_fit_prefix_keeps_the_most_words_that_fit_and_their_spacing():
    text = "one  two\nthree four five six"
    calls = []

    def count(t):
        calls.append(t)
        return _words(t)

    assert fit_prefix(text, 5, count) == "one  two\nthree"  # 3 words + 2 specials
    assert len(calls) <= 1 + 3  # the whole text, then log2(6) + 1 prefixes
    assert fit_prefix(text, 8, _words) == text  # it fits already: unchanged
    assert fit_prefix(text, 2, _words) == ""  # not even one word fits
    assert fit_prefix("", 10, _words) == ""


@pytest.mark.parametrize("limit", range(2, 40))
def test_fit_prefix_agrees_with_a_linear_scan(limit):
    text = " ".join(f"w{i}" * (1 + i % 3) for i in range(30))
    words = text.split()
    best = max((k for k in range(len(words) + 1) if k + 2 <= limit), default=0)
    assert fit_prefix(text, limit, _words) == " ".join(words[:best])
