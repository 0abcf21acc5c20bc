"""The three counting rules against hand-computed counts (``attnscope.analysis.rationale_count``)."""

import pytest

from attnscope.analysis.rationale_count import COUNTING_RULES, RationaleCounts, rationale_counts, token_count


@pytest.mark.parametrize(
    ("k", "n", "ceil", "eraser", "ferret"),
    [
        # the example: 0.2 of 16 is 3.2 -> ceil 4 both sides; ERASER removes 16 - int(12.8) = 4, keeps 3
        (0.2, 16, (4, 4), (4, 3), (3, 3)),
        # a 1% bin of a 50-token text: ERASER keeps nothing, ferret skips, ceil takes 1
        (0.01, 50, (1, 1), (1, 0), (None, None)),
        (0.05, 19, (1, 1), (1, 0), (None, None)),
        (0.05, 20, (1, 1), (1, 1), (1, 1)),
        (0.5, 5, (3, 3), (3, 2), (2, 2)),
        # 0.07 * 100 = 7.000000000000001: ceil counts 7, not 8
        (0.07, 100, (7, 7), (7, 7), (7, 7)),
        # 0.29 * 100 = 28.999999999999996: the tools' int() gives 28, exactly as their code does
        (0.29, 100, (29, 29), (29, 28), (28, 28)),
        (1.0, 7, (7, 7), (7, 7), (7, 7)),
        (0.2, 0, (0, 0), (0, 0), (None, None)),
    ],
)
def test_rules_by_hand(k, n, ceil, eraser, ferret):
    assert rationale_counts(k, n, "ceil") == RationaleCounts(*ceil)
    assert rationale_counts(k, n, "eraser-code") == RationaleCounts(*eraser)
    assert rationale_counts(k, n, "ferret") == RationaleCounts(*ferret)


def test_eraser_code_removes_the_complement_of_what_it_keeps_for_comprehensiveness():
    # ERASER's comprehensiveness input keeps nsmallest(int((1-k) n)) tokens: removed + that = n
    for n in range(1, 120):
        for k in (0.01, 0.05, 0.1, 0.2, 0.5):
            c = rationale_counts(k, n, "eraser-code")
            assert c.remove + int((1 - k) * n) == n and c.keep == int(k * n)
            assert c.keep <= c.remove  # it never keeps more than it removes


def test_token_count_modes_and_errors():
    assert token_count(0.2, 16) == 4 and token_count(0.2, 16, "floor") == 3
    with pytest.raises(ValueError, match="'ceil' or 'floor'"):
        token_count(0.2, 16, "round")
    with pytest.raises(ValueError, match="choose one of eraser-code, eraser-order, ceil, ferret"):
        rationale_counts(0.2, 16, "round")
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        rationale_counts(0.0, 16, "ceil")
    assert COUNTING_RULES == ("eraser-code", "eraser-order", "ceil", "ferret")


def test_eraser_order_counts_as_eraser_code():
    for n in range(0, 40):
        for k in (0.01, 0.07, 0.2, 0.5, 1.0):
            assert rationale_counts(k, n, "eraser-order") == rationale_counts(k, n, "eraser-code")
