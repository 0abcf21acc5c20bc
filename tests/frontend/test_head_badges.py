"""Head badges: a sink at rest shows the type of the rest of its attention (issue 26 item 4)."""

import pytest

from attnscope.frontend.head_badges import head_badge, resting_type
from attnscope.server.schemas import HeadScores


def _head(labels, sink=None, cls_sink=0.0, previous=0.0, self_=0.0, induction=None):
    return HeadScores(
        head="L3H4",
        labels=labels,
        layer=3,
        head_index=4,
        distance=1.0,
        self=self_,
        previous=previous,
        next=0.0,
        shift=0.0,
        cls_sink=cls_sink,
        sep_sink=0.0,
        sink=sink,
        broad=0.0,
        local=0.0,
        induction=induction,
    )


N = 1002  # R = 1000 rows: the row after the sink moves "previous" by at most 1/999


def test_a_sink_whose_rest_is_previous_token_says_so():
    # previous 0.081 over 1000 rows, of which at most 1.0 is the row whose previous token is the sink:
    # (81 - 1) / 999 = 0.0801, of the 0.10 off the sink: 80 %
    head = _head(["sink"], sink=0.9, previous=0.081)
    assert resting_type(head, N) == ("previous", pytest.approx(0.8008, abs=1e-3))
    badge, about = head_badge(head, N)
    assert badge == "sink›prev" and "previous holds 80% of the attention off the sink" in about


def test_a_short_prompt_cannot_make_a_sink_a_previous_token_head():
    # 5 tokens: the row after the sink gives "previous" up to 1/3 of the mean by itself
    head = _head(["sink"], sink=0.9, previous=0.3)
    assert resting_type(head, 5) is None and head_badge(head, 5)[0] == "sink"


def test_an_encoder_cls_sink_with_a_self_rest():
    head = _head(["cls-sink"], cls_sink=0.7, previous=0.05, self_=0.2, induction=0.3)  # self 0.2 / 0.3 = 67 %
    assert head_badge(head, N)[0] == "CLS›self"  # induction comes from the probe's input: not read


def test_a_sink_with_a_diffuse_rest_stays_a_sink():
    assert resting_type(_head(["sink"], sink=0.9, previous=0.03, self_=0.03), N) is None  # 30 %, 30 %
    assert head_badge(_head(["sink"], sink=0.9, previous=0.03), N)[0] == "sink"


def test_all_on_the_sink_leaves_no_rest_to_read():
    assert resting_type(_head(["sink"], sink=0.995, previous=0.005), N) is None  # 0.005 off the sink is noise


def test_heads_with_other_labels_keep_them():
    head = _head(["previous", "sink"], sink=0.6, previous=0.35)
    assert resting_type(head, N) is None and head_badge(head, N)[0] == "prev sink"
    assert head_badge(None, N) == ("", "no type") and head_badge(_head([]), N)[0] == ""
