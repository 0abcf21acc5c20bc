"""Hiding the first token / special tokens of a map: blank columns, rows renormalised over the rest
(issue 26 item 4)."""

import numpy as np
import pytest

from attnscope.frontend.figures import head_detail_figure, head_view_figure
from attnscope.frontend.plot_config import scale_map
from attnscope.frontend.sink_hiding import hidden_positions, hide_note, hide_top_k, renormalise


def _causal(n: int, sink: float, seed: int = 0) -> np.ndarray:
    """A causal map whose rows put ``sink`` on key 0 and the rest at random on keys 1..q."""
    rng = np.random.default_rng(seed)
    w = np.zeros((n, n))
    w[0, 0] = 1.0
    for q in range(1, n):
        rest = rng.random(q)
        w[q, 0], w[q, 1 : q + 1] = sink, (1 - sink) * rest / rest.sum()
    return w


def test_hidden_positions():
    assert hidden_positions("none", 5, [0, 4]) == []
    assert hidden_positions("first", 5, [0, 4]) == [0]
    assert hidden_positions("special", 5, [4, 0, 9]) == [0, 4]
    assert hidden_positions("special", 5, []) == [0]  # a decoder without marked specials: its first token
    with pytest.raises(ValueError, match="none, first, special"):
        hidden_positions("sinks", 5, [])


def test_rows_sum_to_one_over_the_keys_that_remain():
    w = _causal(12, sink=0.9)
    out = renormalise(w, w[:, 0], blank=[0])
    assert np.all(np.isnan(out[:, 0]))
    kept = np.nansum(out[1:], axis=1)
    assert np.allclose(kept, 1.0, atol=1e-6)  # every row but the first, whose only key is hidden
    assert np.all(out[0, 1:] == 0)  # the first row had all its weight hidden: nothing left
    assert np.allclose(out[5, 1:6], w[5, 1:6] / 0.1, atol=1e-6)


def test_two_hidden_keys_outside_the_window_still_renormalise_it():
    w = np.array([[0.5, 0.1, 0.2, 0.2], [0.3, 0.3, 0.1, 0.3]])  # hide 0 and 3, show keys 1..2 only
    out = renormalise(w[:, 1:3], w[:, 0] + w[:, 3], blank=[])
    assert np.allclose(out, [[1 / 3, 2 / 3], [0.75, 0.25]])


def test_row_scaling_ignores_hidden_cells():
    z, _ = scale_map(np.array([[np.nan, 0.2, 0.4], [np.nan, 0.0, 0.0]]), "row")
    assert np.isnan(z[:, 0]).all() and np.allclose(z[0, 1:], [0.5, 1.0]) and np.all(z[1, 1:] == 0)


def test_top_k_lines_to_hidden_keys_go_and_the_rest_renormalise():
    idx = np.array([[[0, 2], [0, 1]]])  # [head, query, k]
    wts = np.array([[[0.8, 0.1], [0.6, 0.3]]])
    out = hide_top_k(idx, wts, np.array([[0.8, 0.6]]), hidden=[0])
    assert np.allclose(out, [[[0.0, 0.5], [0.0, 0.75]]])
    fig = head_view_figure(idx, out, ["a", "b", "c"], [0], 0, note="first token hidden")
    assert "first token hidden" in fig.layout.title.text and "M0,0L1,0" not in fig.layout.shapes[0].path


def test_the_figure_states_the_choice():
    note = hide_note("first", [0], ["<s>", "a"], pooled=False)
    assert note == "first token hidden (<s>@0), rows renormalised over the rest"
    assert "≈ renormalised" in hide_note("special", [0, 9], ["[CLS]"] + ["x"] * 9, pooled=True)
    assert hide_note("none", [], [], pooled=False) == ""
    w = renormalise(_causal(6, 0.9), _causal(6, 0.9)[:, 0], [0])
    fig = head_detail_figure(w, list("abcdef"), f"L0H0<br><sub>{note}</sub>")
    assert note in fig.layout.title.text and np.isnan(np.asarray(fig.data[0].z)[:, 0]).all()


def test_hidden_thumbnails_blank_the_hidden_keys_block_and_renormalise_each_row_block():
    from attnscope.frontend.api_client import Thumbnails
    from attnscope.frontend.pages.explore_views import hidden_thumbnails

    means = np.full((1, 2, 2, 2), 0.25, np.float32)  # [layer, head, row block, key block]
    key_means = np.array([[[[0.5, 0.0], [0.2, 0.1]], [[0.0, 0.0], [0.0, 0.0]]]], np.float32)  # keys 0 and 3
    thumbs = Thumbnails(stride=2, keys=(0, 3), means=means, key_means=key_means)
    assert hidden_thumbnails(thumbs, []) is means
    first = hidden_thumbnails(thumbs, [0])
    assert np.isnan(first[..., 0]).all()  # key 0's block of keys
    np.testing.assert_allclose(first[0, 0, :, 1], [0.25 / 0.5, 0.25 / 0.8])
    np.testing.assert_allclose(first[0, 1, :, 1], [0.25, 0.25])  # nothing on key 0: unchanged
    both = hidden_thumbnails(thumbs, [0, 3])
    assert np.isnan(both).all()  # both key blocks hidden


def test_a_full_map_hides_its_keys_exactly_and_the_title_says_so():
    """``hide_map`` (Compare's and Interventions' full-resolution maps): the hidden columns blank, each
    row over the rest summing to 1, the hidden mass read from the map itself; nothing hidden: unchanged."""
    from attnscope.frontend.sink_hiding import hide_map, with_note

    w = np.array([[0.5, 0.1, 0.2, 0.2], [0.3, 0.3, 0.1, 0.3], [0.0, 0.5, 0.5, 0.0]], dtype=np.float32)
    out = hide_map(w, [0, 3])
    assert np.isnan(out[:, [0, 3]]).all()
    np.testing.assert_allclose(out[:, 1:3], [[1 / 3, 2 / 3], [0.75, 0.25], [0.5, 0.5]], atol=1e-6)
    np.testing.assert_array_equal(hide_map(w, []), w)
    np.testing.assert_array_equal(hide_map(w, [7]), w)  # a key outside the map: nothing to hide
    note = hide_note("first", [0], ["<s>", "a", "b", "c"], pooled=False)
    assert with_note("L0H0", note) == f"L0H0<br><sub>{note}</sub>" and with_note("L0H0", "") == "L0H0"
