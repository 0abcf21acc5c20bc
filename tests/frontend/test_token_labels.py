"""Token labels drawn calmly: WordPiece's ## and the whitespace glyphs in grey, the word plain; labels
without marks unchanged; the rest of a marked label escaped."""

import re

from attnscope.frontend.figures import head_detail_figure
from attnscope.frontend.token_labels import MARK_COLOUR, calm_token

GREY = f'<span style="color:{MARK_COLOUR}">'


def _text(label: str) -> str:
    return re.sub(r"<[^>]+>", "", label).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def test_marks_are_grey_and_the_word_plain():
    assert calm_token("##ing") == f"{GREY}##</span>ing"
    assert calm_token("␣capital") == f"{GREY}␣</span>capital"
    assert calm_token("↵↵") == f"{GREY}↵</span>{GREY}↵</span>"
    assert calm_token("a##b") == "a##b"  # ## marks a continuation only at the start


def test_unmarked_labels_stay_and_marked_ones_keep_their_text():
    for label in ["cat", "[CLS]", "<|im_start|>"]:
        assert calm_token(label) == label
    for label in ["##", "##ing", "␣the", "end↵"]:
        assert _text(calm_token(label)) == label
    assert calm_token("␣<b>") == f"{GREY}␣</span>&lt;b&gt;"  # no markup smuggled in by a token


def test_the_head_detail_ticks_use_them():
    fig = head_detail_figure([[1.0, 0.0], [0.5, 0.5]], ["play", "##ing"], "L0H0")
    assert list(fig.layout.xaxis.ticktext) == ["play", f"{GREY}##</span>ing"]
    assert fig.layout.meta["labels"]["x"] == ["play (0)", "##ing (1)"]  # the CSV keeps the raw token
