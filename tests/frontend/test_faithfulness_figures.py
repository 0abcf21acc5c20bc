"""Pure figure/table builders of the faithfulness page, without a browser."""

import numpy as np
import pytest

from attnscope.frontend.faithfulness_figures import (
    best_per_metric,
    curves_figure,
    metric_table,
    parse_marked_text,
    token_colors,
)


def test_marked_text_gives_clean_text_and_character_spans():
    text, spans = parse_marked_text("a [[truly great]] film, [[not]] bad")
    assert text == "a truly great film, not bad"
    assert [text[a:b] for a, b in spans] == ["truly great", "not"]
    assert parse_marked_text("no marks") == ("no marks", [])


def test_token_colors_scale_by_the_largest_non_special_score():
    colors = token_colors([5.0, 0.5, -0.25, 0.0, 9.0], special=(0, 4))
    assert colors[0] == colors[4] == "rgba(200,200,200,0.35)"
    assert colors[1] == "rgba(178,24,43,1.000)"  # the largest |score| among words
    assert colors[2] == "rgba(33,102,172,0.500)"  # negative: blue, half as strong
    assert token_colors([0.0, 0.0])[0].endswith("0.000)")  # all zero: no division by zero


def test_curves_figure_has_one_line_per_explainer_and_panel():
    fig = curves_figure(
        [0.01, 0.1, 0.5],
        {"rollout": [0.1, 0.2, 0.4], "random": [0.0, None, 0.1]},
        {"rollout": [0.3, 0.2, 0.1], "random": [0.4, 0.3, 0.2]},
    )
    assert len(fig.data) == 4
    assert list(fig.data[0].x) == [1.0, 10.0, 50.0]
    assert [t.showlegend for t in fig.data] == [True, True, False, False]
    assert fig.data[1].line.dash == "dot"  # the random baseline stands apart
    # each explainer keeps its colour on the sufficiency panel (the one legend names both panels)
    assert fig.data[2].line.color == fig.data[0].line.color != fig.data[1].line.color == fig.data[3].line.color


def test_metric_table_and_best_per_metric():
    rows = [
        {"explainer": "rollout", "comprehensiveness": 0.31234, "sufficiency": 0.1},
        {"explainer": "random", "comprehensiveness": 0.05, "sufficiency": None},
    ]
    cols, data = metric_table(rows, ["comprehensiveness", "sufficiency"])
    assert [c["id"] for c in cols] == ["explainer", "comprehensiveness", "sufficiency"]
    assert data[0] == {"explainer": "rollout", "comprehensiveness": "0.312", "sufficiency": "0.100"}
    assert data[1]["explainer"] == "random (baseline)" and data[1]["sufficiency"] == "–"
    rows.append({"explainer": "ig", "comprehensiveness": 0.2, "sufficiency": 0.05})
    assert best_per_metric(rows, ["comprehensiveness", "sufficiency"]) == {
        "comprehensiveness": "rollout",
        "sufficiency": "ig",
    }


def test_metric_table_shows_each_mean_with_its_interval_and_the_paired_verdict():
    from attnscope.frontend.faithfulness_figures import verdict
    from attnscope.pipelines.faithfulness_uncertainty import uncertainty

    rng = np.random.default_rng(0)
    # 30 examples: "good" removes 0.3 more probability than random on every example (comprehensiveness),
    # "same" is random plus noise with mean 0 (no difference); sufficiency: "good" lower by 0.2
    base = rng.uniform(0, 0.2, 30)
    noise = rng.normal(0, 0.05, 30)
    noise -= noise.mean()
    jitter = rng.normal(0, 0.02, 30)
    jitter -= jitter.mean()
    comp = {"random": base, "good": base + 0.3 + jitter, "same": base + noise}
    suff = {"random": base + 0.3, "good": base + 0.1 + jitter, "same": base + 0.3 - noise}
    records = [
        {"faith": {e: {"comprehensiveness": comp[e][i], "sufficiency": suff[e][i]} for e in comp}, "plaus": {}}
        for i in range(30)
    ]
    extra = uncertainty(records, ["good", "same", "random"], ["comprehensiveness", "sufficiency"], start=0)
    rows = [{"explainer": e, "comprehensiveness": comp[e].mean(), "sufficiency": suff[e].mean()} for e in comp]
    cols, data = metric_table(rows, ["comprehensiveness", "sufficiency"], extra["intervals"], extra["vs_random"])
    good = extra["intervals"]["good"]["comprehensiveness"]
    assert data[1]["comprehensiveness"] == f"{good['mean']:.3f} [{good['low']:.3f}, {good['high']:.3f}]"
    paired = {d["explainer"]: d for d in data if d["explainer"].endswith("(paired)")}
    assert set(paired) == {"good − random (paired)", "same − random (paired)"}
    assert paired["good − random (paired)"]["comprehensiveness"].endswith("better")
    assert (
        paired["good − random (paired)"]["sufficiency"].startswith("-0.200")
        and "better" in (paired["good − random (paired)"]["sufficiency"])
    )
    assert paired["same − random (paired)"]["comprehensiveness"].endswith("no difference")
    assert verdict({"mean": 0.1, "low": 0.05, "high": 0.15}, "sufficiency") == "worse"
    assert verdict({"mean": 0.1, "low": None, "high": None}, "comprehensiveness") == "no interval"
    # without intervals (a single example's table) the cells stay plain means
    assert metric_table(rows, ["sufficiency"])[1][0]["sufficiency"] == f"{suff['random'].mean():.3f}"


@pytest.mark.parametrize("bad", ["[[unclosed", "]] only"])
def test_unbalanced_marks_are_left_as_text(bad):
    assert parse_marked_text(bad) == (bad, [])


def test_attention_options_from_the_page_controls():
    from attnscope.frontend.pages.faithfulness_callbacks import attention_options

    assert attention_options(None, None, None) == {"attention": {"layer": -1, "row": "cls"}}
    assert attention_options(2, " 3, 0,3 ", "mean") == {"attention": {"layer": 2, "row": "mean", "heads": [0, 3]}}
    assert attention_options(-1, "ALL", "cls")["attention"].get("heads") is None
    with pytest.raises(ValueError, match="comma-separated head numbers"):
        attention_options(0, "0,x", "cls")


def test_a_data_set_table_gives_each_rows_n_and_the_paired_rows_n():
    rows = [
        {"explainer": "good", "n": 28, "comprehensiveness": 0.4},
        {"explainer": "random", "n": 30, "comprehensiveness": 0.1},
    ]
    intervals = {"good": {"comprehensiveness": {"mean": 0.4, "low": 0.3, "high": 0.5, "n": 28}}}
    vs_random = {"good": {"comprehensiveness": {"mean": 0.3, "low": 0.2, "high": 0.4, "n": 28}}, "random": None}
    cols, data = metric_table(rows, ["comprehensiveness"], intervals, vs_random)
    assert [c["id"] for c in cols] == ["explainer", "n", "comprehensiveness"]
    assert [(d["explainer"], d["n"]) for d in data] == [
        ("good", 28),
        ("random (baseline)", 30),
        ("good − random (paired)", 28),
    ]
    assert "n" not in metric_table([{"explainer": "good", "comprehensiveness": 0.4}], ["comprehensiveness"])[1][0]
