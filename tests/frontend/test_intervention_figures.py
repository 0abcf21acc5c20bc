"""Figure builders of the interventions page and the Structure page's causal panel (no browser)."""

import numpy as np

from attnscope.frontend.intervention_figures import (
    effect_grid_figure,
    importance_scatter,
    parse_heads,
    pick_type_score,
    prediction_summary,
    type_effect_rows,
    type_effect_scatter,
)


def test_parse_heads_reads_labels_and_names_bad_parts():
    assert parse_heads("L0H1, l3h2; L0H1") == ([[0, 1], [3, 2]], [])
    heads, problems = parse_heads("L0H1, head 3, ")
    assert heads == [[0, 1]] and problems == ["'head 3' is not a head label like L0H1"]
    assert parse_heads(None) == ([], [])


def test_effect_grid_is_symmetric_around_zero_and_outlines_selected_heads():
    effect = [[0.1, -0.4], [0.0, 0.2]]
    fig = effect_grid_figure(effect, "prob", [[0, 1], [9, 9]])
    hm = fig.data[0]
    assert hm.zmin == -0.4 and hm.zmax == 0.4 and hm.zmid == 0
    assert list(hm.y) == ["L0", "L1"] and list(hm.x) == ["H0", "H1"]
    assert len(fig.layout.shapes) == 1  # the out-of-range head is not drawn
    assert fig.layout.shapes[0].x0 == 0.5 and fig.layout.shapes[0].y0 == -0.5


def test_importance_scatter_plots_abs_effect_and_rho():
    grid = {"effect": [[-0.5, 0.1]], "importance": [[0.9, 0.2]], "rank_agreement": {"rho": 1.0, "p": 0.0, "n": 2}}
    fig = importance_scatter(grid)
    assert list(fig.data[0].y) == [0.5, 0.1] and list(fig.data[0].text) == ["L0H0", "L0H1"]
    assert "ρ = 1.00" in fig.layout.title.text


def test_type_score_scatter_and_rows():
    heads = [
        {"head": "L0H0", "labels": ["previous"], "previous": 0.9, "induction": 0.0},
        {"head": "L0H1", "labels": [], "previous": 0.1, "induction": 0.7},
    ]
    assert pick_type_score(heads, "induction") == "induction"
    assert pick_type_score(heads, "nope") == "induction"  # the first of TYPE_SCORES the heads have
    assert pick_type_score([{"head": "L0H0"}], None) is None
    fig = type_effect_scatter(heads, [[0.05, -0.3]], "previous", "prob")
    assert list(fig.data[0].x) == [0.9, 0.1] and list(fig.data[0].y) == [0.05, -0.3]
    rows = type_effect_rows(heads, np.array([[0.05, -0.3]]))
    assert rows == [{"head": "L0H1", "type": "—", "effect": -0.3}, {"head": "L0H0", "type": "previous", "effect": 0.05}]


def test_prediction_summary():
    cls = {"kind": "classification", "labels": ["neg", "pos"], "probs": [0.2, 0.8]}
    assert prediction_summary(cls) == "pos (0.800)"
    pred = {"kind": "next-token", "top_k": [[{"text": " Paris", "prob": 0.5}]]}
    assert prediction_summary(pred) == "' Paris' (0.500)"
