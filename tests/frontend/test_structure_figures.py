"""Structure figure builders, without a browser."""

import numpy as np

from attnscope.frontend.head_badges import badge_text
from attnscope.frontend.structure_figures import (
    census_figure,
    evolution_figure,
    grid_importance_figure,
    importance_figure,
    kernel_figure,
    shift_grid_figure,
)
from attnscope.server.schemas import EvolutionProfile


def test_shift_grid_writes_each_heads_best_offset():
    fig = shift_grid_figure([[0.9, 0.1]], [[-1, 0]], [[0.95, 0.3]])
    assert fig.data[0].text == (("-1", "0"),) or list(map(list, fig.data[0].text)) == [["-1", "0"]]
    assert fig.data[0].texttemplate == "%{text}"
    fig2d = shift_grid_figure([[0.7]], [[[1, -1]]], [[0.8]])
    assert list(map(list, fig2d.data[0].text)) == [["(+1,-1)"]]


def test_kernel_figure_is_bars_in_1d_and_a_patch_in_2d():
    one = kernel_figure([0.1, 0.8, 0.1], [-1, 0, 1], [3], "L0H0", 0.9)
    assert one.data[0].type == "bar" and list(one.data[0].x) == [-1, 0, 1]
    assert "R² = 0.90" in one.layout.title.text
    two = kernel_figure(
        np.eye(3).ravel().tolist(), [[i, j] for i in (-1, 0, 1) for j in (-1, 0, 1)], [3, 3], "L1H1", 0.5
    )
    assert two.data[0].type == "heatmap" and np.asarray(two.data[0].z).shape == (3, 3)


def test_evolution_overlays_two_models():
    heads = [[0.5], [0.5]]
    prof = EvolutionProfile(
        model="a",
        layer_entropy=[0.9, 0.5],
        layer_norm_entropy=[0.9, 0.5],
        layer_top1=[0.2, 0.6],
        head_entropy=heads,
        head_norm_entropy=heads,
        head_effective_keys=heads,
        head_top1=heads,
        slope=-0.4,
        js_next=[0.1],
        cosine_next=[0.9],
    )
    other = prof.model_copy(update={"model": "b", "layer_norm_entropy": [0.8, 0.7, 0.3], "layer_top1": [0.1, 0.2, 0.7]})
    fig = evolution_figure([prof, other])
    assert len(fig.data) == 4 and list(fig.data[2].x) == [0.0, 0.5, 1.0]
    assert "a: -0.400" in fig.layout.title.text


def test_importance_and_census_figures():
    fig = importance_figure(["[CLS]", "a", "[SEP]"], {"rollout": [0.5, 0.3, 0.2], "flow": [0.4, 0.4, 0.2]})
    assert [t.name for t in fig.data] == ["rollout", "flow"]
    assert list(fig.layout.xaxis.ticktext) == ["[CLS]", "a", "[SEP]"]
    assert np.asarray(grid_importance_figure([[1, 2], [3, 4]], "t").data[0].z).shape == (2, 2)
    assert census_figure([[0.1, 0.2]], "shift_score").layout.title.text == "Census: mean shift_score per head"


def test_badges_are_short():
    assert badge_text(["previous", "cls-sink"]) == "prev CLS"
    assert badge_text(["shift-3"]) == "-3"
    assert badge_text(["shift(+1,+0)", "local", "broad"]) == "(+1,+0) local"
