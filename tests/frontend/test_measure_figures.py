"""Pure figure builders of the measure page, without a browser."""

import numpy as np
import pytest

from attnscope.frontend.lipschitz_figures import fixed_point_figure, fixed_point_summary, lipschitz_figure
from attnscope.frontend.particle_figures import particle_figure, token_colors, w1_profile_figure
from attnscope.frontend.plot_config import message_figure
from attnscope.server.schemas import BlockBound, FixedPointPublic

TOKENS = ["[CLS]", "the", "cat", "[SEP]"]
LABELS = ["embeddings", "after layer 0", "after layer 1"]


def coords(k=2, seed=0):
    return np.random.default_rng(seed).standard_normal((3, 4, k))


def test_particles_2d_frames_follow_the_depths_and_hover_shows_tokens():
    c = coords()
    fig = particle_figure(c, TOKENS, LABELS, explained=[0.5, 0.2])
    trails, points = fig.data
    assert trails.mode == "lines" and list(points.text) == TOKENS and "%{text}" in points.hovertemplate
    np.testing.assert_allclose(points.x, c[0, :, 0])
    assert [f.name for f in fig.frames] == ["0", "1", "2"]
    for d, frame in enumerate(fig.frames):
        np.testing.assert_allclose(frame.data[0].y, c[d, :, 1])
        assert frame.traces == (1,)
    assert [s.label for s in fig.layout.sliders[0].steps] == ["embeddings", "layer 0", "layer 1"]
    lo, hi = fig.layout.xaxis.range
    assert lo < c[..., 0].min() and hi > c[..., 0].max()  # fixed range: the points move, not the axes
    assert fig.layout.xaxis.title.text == "PC1 (50%)"
    assert list(points.marker.color) == token_colors(4)
    nan_rows = np.isnan(np.asarray(trails.x, dtype=float)).sum()
    assert nan_rows == 4  # one path per token


def test_particles_3d_use_a_scene():
    fig = particle_figure(coords(3), TOKENS, LABELS, depth=2)
    assert fig.data[1].type == "scatter3d" and fig.layout.sliders[0].active == 2
    assert fig.layout.scene.aspectmode == "cube"
    np.testing.assert_allclose(fig.data[1].z, coords(3)[2, :, 2])


@pytest.mark.parametrize(
    "bad, tokens", [(np.zeros((3, 4)), TOKENS), (np.zeros((3, 4, 5)), TOKENS), (np.zeros((3, 5, 2)), TOKENS)]
)
def test_particles_refuse_bad_shapes(bad, tokens):
    with pytest.raises(ValueError, match="coords"):
        particle_figure(bad, tokens, LABELS)


def test_w1_profile_bars_and_hover():
    fig = w1_profile_figure([1.5, 0.25], [3e-7, 5e-7])
    bar = fig.data[0]
    assert list(bar.y) == [1.5, 0.25] and list(bar.x) == ["L0", "L1"]
    assert "deviation 5.00e-07" in bar.hovertext[1]


def test_lipschitz_panel_is_sorted_and_reports_the_ratio():
    rows = [
        {"layer": 1, "log10_bound": 200.0, "log10_estimate": 1.5, "radius": 12.0},
        {"layer": 0, "log10_bound": 750.0, "log10_estimate": 1.2, "radius": 11.0},
    ]
    fig = lipschitz_figure(rows)
    bound, est = fig.data
    assert list(bound.x) == ["L0", "L1"] and list(bound.y) == [750.0, 200.0] and list(est.y) == [1.2, 1.5]
    assert est.customdata[0][0] == pytest.approx(1.2 - 750.0)
    assert "DERIVED" in bound.name and "log10" in fig.layout.yaxis.title.text
    # the estimate has its own axis: 750 decades of bound no longer flatten it to a line at 0
    assert est.yaxis == "y2" and bound.yaxis == "y" and "L̂" in fig.layout.yaxis2.title.text


def test_long_messages_wrap_and_log_axes_label_whole_decades():
    message = "text-ha: " + "this model needs a longer input than the one given " * 4
    text = message_figure(message).layout.annotations[0].text
    assert all(len(line) <= 60 for line in text.split("<br>")) and text.count("<br>") >= 3
    fig = fixed_point_figure([1e-12, 1e-3, 1.0, 1e2], "block")
    assert fig.layout.yaxis.dtick == 3 and fig.layout.yaxis.exponentformat == "power"  # 14 decades, <= 6 labels


def test_fixed_point_curve_on_a_log_axis():
    fig = fixed_point_figure([1.0, 0.5, 0.0], "layer 2 block", trained_depth=1, rate=0.5)
    assert fig.layout.yaxis.type == "log" and min(fig.data[0].y) > 0
    assert list(fig.data[0].x) == [1, 2, 3]
    assert "rate ≈ 0.500" in fig.layout.title.text and "layer 2 block" in fig.layout.title.text
    assert len(fig.layout.shapes) == 1


def test_fixed_point_figure_with_the_bound_along_the_orbit():
    fig = fixed_point_figure(
        [3.0, 3.1, 3.0, 3.0],
        "shared block",
        trained_depth=2,
        rate=1.0,
        normalised=[2.0, 0.5, 0.1, 0.0],
        orbit_bound=[2.5, 1.5],
        orbit_ratio=[1.2, None],
    )
    raw, norm, bound, observed = fig.data
    assert "standardised" in norm.name and min(norm.y) > 0
    assert "DERIVED" in bound.name and list(bound.y) == [2.5, 1.5]
    assert observed.y[0] == pytest.approx(np.log10(1.2)) and observed.y[1] is None
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type != "log"
    assert any("L = 1" in a.text for a in fig.layout.annotations)


def test_fixed_point_summary_states_behaviour_and_contraction_condition():
    base = dict(
        run_id="r",
        model="text-ha",
        block="shared block",
        demonstration=False,
        trained_depth=2,
        start_depth=0,
        n_steps=4,
        w1_steps=[3.0, 3.0, 3.0, 3.0],
        rate=1.0,
        converged=False,
        orbit_radius=10.0,
        behaviour="drifts",
        drift=3.0,
        w1_normalised_steps=[1, 0.5, 0.2, 0.1],
        normalised_order=1.7,
    )
    bound = BlockBound(
        log10_global_bound=7.6,
        ln1_factor=367.0,
        attention_factor=55.0,
        ln2_factor=367.0,
        ffn_factor=5.2,
        contraction=False,
        log10_orbit_bound=[2.9, 1.1],
        orbit_step_ratio=[1.3, 1.0],
        orbit_worst_slack=-0.5,
        estimate=6.9,
        log10_bound_at_estimate=2.9,
        estimate_worst_slack=-2.1,
    )
    text = fixed_point_summary(FixedPointPublic(**base, block_bound=bound))
    assert "drifts by W1 ≈ 3" in text and "t^-1.70" in text
    assert "L < 1" in text and "not met" in text and "2.90 → 1.10" in text and "-0.50" in text
    demo = fixed_point_summary(
        FixedPointPublic(
            **{**base, "behaviour": "converges", "drift": None}, log10_bound_attention=12.0, attention_contraction=False
        )
    )
    assert demo.startswith("The iterates converge") and "log10 L = 12.0" in demo and "t^-" not in demo


def test_message_figure():
    assert message_figure("Run a text").layout.annotations[0].text == "Run a text"
