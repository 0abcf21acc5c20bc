"""The compare page's pure helpers: aligned maps renormalised, pair labels, one colour range for A
and B, and the token-count note."""

import numpy as np
import pytest

from attnscope.frontend.compare_figures import mismatch_note, pair_labels, restrict_map, share_colour_range
from attnscope.frontend.figures import head_detail_figure


def test_restrict_map_keeps_the_aligned_rows_and_keys_renormalised():
    rng = np.random.default_rng(0)
    w = rng.random((3, 5, 5))  # [head, query, key]
    w /= w.sum(-1, keepdims=True)
    sub = restrict_map(w, [0, 1, 3])
    expected = w[:, [0, 1, 3]][:, :, [0, 1, 3]]
    np.testing.assert_allclose(sub, expected / expected.sum(-1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(sub.sum(-1), 1.0, rtol=1e-6)
    assert restrict_map(w[0], [4, 2]).shape == (2, 2)  # one head [query, key] too
    np.testing.assert_array_equal(restrict_map(w, None), w.astype(np.float32))
    np.testing.assert_array_equal(restrict_map(np.zeros((2, 2)), [0, 1]), np.zeros((2, 2)))


def test_pair_labels_name_both_tokens_where_they_differ():
    assert pair_labels(["the", "cat", "sat"], ["the", "dog", "sat"]) == ["the", "cat→dog", "sat"]


@pytest.mark.parametrize("scaling", ["global", "row", "log"])
def test_a_and_b_share_one_colour_range(scaling):
    a = np.array([[0.9, 0.1], [0.5, 0.5]])
    b = np.array([[0.6, 0.4], [0.3, 0.7]])
    fa = head_detail_figure(a, ["x", "y"], "A", scaling=scaling)
    fb = head_detail_figure(b, ["x", "y"], "B", scaling=scaling)
    top = share_colour_range(fa, fb)
    assert (fa.data[0].zmin, fa.data[0].zmax) == (fb.data[0].zmin, fb.data[0].zmax)
    if scaling == "global":
        assert top == pytest.approx(0.9) and fa.data[0].zmin == 0.0  # A's largest weight tops B's scale too


def test_the_mismatch_note_says_both_counts_and_both_ways_out():
    note = mismatch_note(9, 12)
    assert "A has 9 tokens and B has 12" in note and "Retry cannot help" in note
    assert "aligned tokens" in note and "word for word" in note
