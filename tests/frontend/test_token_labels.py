"""Token labels drawn calmly: WordPiece's ## and the whitespace glyphs in grey, the word plain; labels
without marks unchanged; the rest of a marked label escaped."""

import re

import numpy as np

from attnscope.frontend.figures import head_detail_figure
from attnscope.frontend.structure_figures import importance_figure
from attnscope.frontend.token_labels import MARK_COLOUR, MOST_TICKS, calm_token, token_ticks

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


def test_long_token_axes_label_every_kth_position_and_short_ones_every_position():
    short = token_ticks(["a", "##b", "c"])
    assert short["tickvals"] == [0, 1, 2] and short["ticktext"] == ["a", f"{GREY}##</span>b", "c"]
    labels = [f"t{i}" for i in range(1023)]
    long = token_ticks(labels)
    assert 40 <= len(long["tickvals"]) <= MOST_TICKS and long["tickvals"][0] == 0
    assert long["ticktext"] == [labels[i] for i in long["tickvals"]]
    assert len(set(np.diff(long["tickvals"]))) == 1  # evenly spaced
    fig = importance_figure(labels, {"rollout": [1.0 / 1023] * 1023})
    assert list(fig.layout.xaxis.tickvals) == long["tickvals"] and len(fig.data[0].customdata) == 1023
