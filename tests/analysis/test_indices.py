"""check_index: the one range check of layers, heads, positions and classes."""

import pytest

from attnscope.analysis.indices import OutOfRangeError, check_index


def test_in_range_values_pass_through():
    assert check_index("layer", 0, 6) == 0 and check_index("layer", 5, 6) == 5
    assert check_index("layer", -6, 6, negative=True) == -6


@pytest.mark.parametrize("value", [6, -1, True, 2.0])
def test_out_of_range_says_what_to_send(value):
    with pytest.raises(OutOfRangeError, match=r"layer=.* is out of range: this model has 6 layers, use 0\.\.5"):
        check_index("layer", value, 6)


def test_wording_and_negative_range():
    with pytest.raises(OutOfRangeError, match=r"query=9 is out of range: this run has 9 positions, use 0\.\.8"):
        check_index("query", 9, 9, owner="this run", what="positions")
    with pytest.raises(OutOfRangeError, match=r"use -6\.\.5"):
        check_index("layer", -7, 6, negative=True)
    assert issubclass(OutOfRangeError, IndexError) and issubclass(OutOfRangeError, ValueError)
