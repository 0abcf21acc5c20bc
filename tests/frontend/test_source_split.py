"""A head's split over its source tokens as coloured text (no browser): each source's background is
its amount (red towards the target, blue against, the strongest the deepest), a long text keeps the
windows around the strongest sources, and the summary names the largest with their amounts."""

import numpy as np
import pytest

from attnscope.frontend.source_split import share_colour, shown_positions, split_summary, split_text


def test_colours_run_from_white_to_the_signed_ends():
    assert share_colour(0.0, 1.0) == "rgb(255,255,255)" and share_colour(1.0, 0.0) == "rgb(255,255,255)"
    deep, light = share_colour(2.0, 2.0), share_colour(0.5, 2.0)
    assert deep == "rgb(213,128,138)"  # 55 % of #b2182b over white
    assert light != deep and share_colour(-2.0, 2.0) == "rgb(133,171,209)"  # 55 % of #2166ac


def test_a_short_text_is_whole_and_a_long_one_keeps_windows_around_the_strongest():
    assert shown_positions(np.ones(5)) == [0, 1, 2, 3, 4]
    s = np.zeros(1000)
    s[10], s[500] = 1.0, -2.0
    shown = shown_positions(s, limit=100, strongest=2, context=2)
    assert shown == [None, 8, 9, 10, 11, 12, None, 498, 499, 500, 501, 502, None]


def test_the_text_holds_every_source_with_its_amount_and_the_summary_names_the_largest():
    tokens = ["The", " capital", " of", " France", " is"]
    sources = [0.1, -0.05, 0.0, 2.1, 0.3]
    summary, text = split_text("L23H4", 2.45, tokens, sources)
    spans = text.children
    assert [s.children for s in spans] == ["The", "␣capital", "␣of", "␣France", "␣is"]
    assert [float(s.to_plotly_json()["props"]["data-value"]) for s in spans] == pytest.approx(sources)
    assert spans[3].style["backgroundColor"] == share_colour(2.1, 2.1) and spans[2].title == "position 2: +0.0000"
    assert summary.children == split_summary("L23H4", 2.45, tokens, sources)
    assert summary.children.startswith("L23H4 writes +2.450 into the logit; most from position 3 ␣France +2.100")
