"""The vision page's pure figure builders, on tiny known inputs."""

import numpy as np
import plotly.graph_objects as go

from attnscope.frontend.vision_figures import (
    attention_on_grid,
    ellipse,
    grid_cell,
    image_figure,
    query_index,
    query_pixel_figure,
    special_mass,
)


def test_grid_cell_rounds_and_clips_clicks():
    assert grid_cell(2.4, 0.6, (3, 4)) == (1, 2)
    assert grid_cell(-3, 9, (3, 4)) == (2, 0)


def test_query_index_skips_special_tokens():
    assert query_index((0, 0), (2, 2), []) == 0
    assert query_index((1, 0), (2, 2), [0]) == 3  # CLS first: grid cell 2 is token 3


def test_attention_on_grid_reads_the_query_row_without_special_keys():
    w = np.zeros((2, 5, 5), np.float32)
    w[1, 3] = [0.5, 0.1, 0.2, 0.0, 0.2]  # head 1, query token 3 (cell (1, 0) after CLS)
    grid = attention_on_grid(w, 3, (2, 2), [0])
    np.testing.assert_allclose(grid[1], [[0.1, 0.2], [0.0, 0.2]])
    np.testing.assert_allclose(special_mass(w, 3, [0]), [0.0, 0.5])


def test_ellipse_of_a_diagonal_gaussian_spans_its_standard_deviations():
    x, y = ellipse((2.0, 5.0), np.diag([4.0, 1.0]), n_std=1.0)
    assert np.isclose(y.max() - y.min(), 4.0, atol=1e-2)  # row sd 2
    assert np.isclose(x.max() - x.min(), 2.0, atol=1e-2)  # col sd 1
    assert np.isclose(x.mean(), 5.0, atol=0.05) and np.isclose(y.mean(), 2.0, atol=0.05)


def test_query_pixel_figure_has_one_panel_per_head_with_the_attention_overlay():
    rng = np.random.default_rng(0)
    w = rng.random((3, 4, 4)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    image = np.zeros((8, 8), np.uint8)
    fig = query_pixel_figure(image, w, (2, 2), [], (1, 1), layer=0, columns=2)
    heat = [t for t in fig.data if isinstance(t, go.Heatmap)]
    assert len(heat) == 3 and len([t for t in fig.data if isinstance(t, go.Image)]) == 3
    np.testing.assert_allclose(np.asarray(heat[2].z), w[2, 3].reshape(2, 2))
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["L0H0", "L0H1", "L0H2"]
    assert "row 1, col 1" in fig.layout.title.text


def test_gaussian_heads_get_their_centre_and_spread_drawn_relative_to_the_query():
    w = np.full((1, 9, 9), 1 / 9, np.float32)
    g = [{"center": [1.0, -1.0], "cov": [[0.25, 0.0], [0.0, 0.25]]}]
    fig = query_pixel_figure(np.zeros((3, 3), np.uint8), w, (3, 3), [], (1, 1), layer=2, gaussians=g)
    centre = [t for t in fig.data if isinstance(t, go.Scatter) and t.marker.symbol == "x"]
    assert len(centre) == 1 and (centre[0].x[0], centre[0].y[0]) == (0.0, 2.0)
    lines = [t for t in fig.data if isinstance(t, go.Scatter) and t.mode == "lines"]
    assert len(lines) == 2  # 1 and 2 sigma


def test_image_figure_marks_the_query_cell():
    fig = image_figure(np.zeros((28, 28), np.uint8), (14, 14), (3, 5))
    marker = [t for t in fig.data if isinstance(t, go.Scatter)][0]
    assert (marker.x[0], marker.y[0]) == (5, 3)
    img = [t for t in fig.data if isinstance(t, go.Image)][0]
    assert np.isclose(img.dx, 0.5) and np.isclose(img.x0, -0.25)


def test_conv_vs_attention_figure_puts_both_on_one_colour_scale():
    from attnscope.frontend.vision_figures import conv_vs_attention_figure

    conv = np.array([[0.0, 1.0], [2.0, -1.0]])
    fig = conv_vs_attention_figure(conv, conv + 1e-6, channel=2, max_abs_diff=1e-6)
    a, b = [t for t in fig.data if isinstance(t, go.Heatmap)]
    assert (a.zmin, a.zmax) == (b.zmin, b.zmax) and a.zmin <= -1.0 and a.zmax >= 2.0
    assert "channel 2" in fig.layout.title.text and "1.0e-06" in fig.layout.title.text


def test_rollout_overlay_puts_the_heatmap_over_the_image():
    from attnscope.frontend.vision_figures import rollout_overlay_figure

    img = np.zeros((28, 28), np.uint8)
    fig = rollout_overlay_figure(img, np.ones((7, 7)) / 49, (7, 7), "t")
    assert [t.type for t in fig.data] == ["image", "heatmap"]
    assert np.asarray(fig.data[1].z).shape == (7, 7) and fig.data[1].opacity == 0.55
