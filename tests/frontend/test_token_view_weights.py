"""The token-centred view's pure parts: the focus's weights over heads with hidden keys, and the
sentence that names the strongest tokens."""

import numpy as np

from attnscope.frontend.token_view import focus_weights, summary


def test_focus_weights_average_the_heads_and_renormalise_a_row_over_the_keys_not_hidden():
    rows = [np.array([0.6, 0.2, 0.2, 0.0]), np.array([0.2, 0.4, 0.2, 0.2])]
    w, blank = focus_weights(rows, "from", 2, [])
    np.testing.assert_allclose(w, [0.4, 0.3, 0.2, 0.1]) and blank == []
    w, blank = focus_weights(rows, "from", 2, [0])
    assert np.isnan(w[0]) and blank == [0]
    np.testing.assert_allclose(w[1:], np.array([0.3, 0.2, 0.1]) / 0.6)  # sums to 1 over the rest
    col, _ = focus_weights(rows, "to", 2, [0])  # a column: the queries that read the focus, hidden ones too
    np.testing.assert_allclose(col, [0.4, 0.3, 0.2, 0.1])
    hidden_focus, blank = focus_weights(rows, "to", 0, [0])
    assert np.isnan(hidden_focus).all() and blank == [0, 1, 2, 3]


def test_the_summary_names_the_focus_and_its_strongest_tokens():
    tokens = ["[CLS]", "the", "cat", "sat"]
    text = summary(tokens, np.array([0.1, np.nan, 0.6, 0.3]), 3, "from", "layer 2, head H1", n=2)
    assert text == "sat@3 reads most: cat@2 (0.600), sat@3 (0.300) · layer 2, head H1"
    assert "is read most by: nothing" in summary(tokens, np.zeros(4), 0, "to", "x")
