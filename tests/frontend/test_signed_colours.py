"""One colour convention for signed values on every page (issue 26 item 12): red is positive, blue
negative, white 0, in heatmaps (head effects, the patching plot, A - B), bars (direct logit
attribution) and token backgrounds (explainer evidence)."""

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from attnscope.frontend.compare_figures import diff_map_figure
from attnscope.frontend.faithfulness_figures import token_colors
from attnscope.frontend.intervention_figures import effect_grid_figure, patching_figure
from attnscope.frontend.plot_config import DIVERGING, NEGATIVE, POSITIVE


def _rgb(colour: str) -> tuple[int, int, int]:
    if colour.startswith("#"):
        return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return tuple(int(float(c)) for c in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3])


def _ends(trace) -> tuple[tuple, tuple]:
    """The colours a heatmap gives its lowest and highest value."""
    scale = [c for _, c in go.Heatmap(colorscale=trace.colorscale).colorscale]
    if trace.reversescale:
        scale = scale[::-1]
    return _rgb(scale[0]), _rgb(scale[-1])


def _reddish(rgb) -> bool:
    return rgb[0] > rgb[2] + 60


def _bluish(rgb) -> bool:
    return rgb[2] > rgb[0] + 60


def test_the_convention_is_the_diverging_scale_ends():
    low, high = sample_colorscale(DIVERGING, [0.0, 1.0])
    assert _reddish(_rgb(high)) and _bluish(_rgb(low))
    assert _reddish(_rgb(POSITIVE)) and _bluish(_rgb(NEGATIVE))


def test_every_signed_heatmap_is_red_above_zero_and_blue_below():
    effect = np.array([[0.5, -0.2], [0.0, 1.0]])
    figures = [
        effect_grid_figure(effect, "prob"),
        patching_figure(effect, ["a", "b"], "logit_diff"),
        diff_map_figure(effect, ["a", "b"], "A − B"),
    ]
    for fig in figures:
        trace = fig.data[0]
        low, high = _ends(trace)
        assert _bluish(low) and _reddish(high), fig.layout.title.text
        assert trace.zmin == -trace.zmax  # white at 0


def test_signed_token_evidence_is_red_for_positive_and_blue_for_negative():
    pos, neg = token_colors([1.0, -1.0])
    assert _rgb(pos) == _rgb(POSITIVE) and _rgb(neg) == _rgb(NEGATIVE)
