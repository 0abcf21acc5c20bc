"""The interventions page's pure parts: its fields as API bodies (each problem named), the knockout's
edge list, the later layer the maps show, and the patching plot."""

from __future__ import annotations

import numpy as np
import pytest

from attnscope.frontend.intervention_figures import patching_figure
from attnscope.frontend.intervention_forms import (
    intervention_item,
    metric_fields,
    parse_edges,
    parse_ints,
    toggle_edge,
    touched_layer,
    view_layer,
)
from attnscope.server.schemas import InterventionCreate, ResidualPatchingCreate


def test_edges_parse_toggle_and_name_bad_parts():
    assert parse_edges("5>1, 6->2; 7 → 0, 5>1") == ([[5, 1], [6, 2], [7, 0]], [])
    edges, problems = parse_edges("5>1, 5-1")
    assert edges == [[5, 1]] and problems == ["'5-1' is not an edge like 5>1 (query 5 -> key 1)"]
    assert toggle_edge("", 3, 1) == "3>1"
    assert toggle_edge("3>1", 4, 2) == "3>1, 4>2"
    assert toggle_edge("3>1, 4>2", 3, 1) == "4>2"
    assert parse_ints("2, x, 2, 0", "layer") == ([2, 0], ["'x' is not a layer (a whole number from 0)"])


@pytest.mark.parametrize(
    ("fields", "item"),
    [
        (
            ("ablate", "L0H1, L3H2", "mean", "", "", None, ""),
            {"kind": "ablate", "heads": [[0, 1], [3, 2]], "method": "mean"},
        ),
        (("patch_heads", "L2H0", None, "", "", None, ""), {"kind": "patch_heads", "heads": [[2, 0]]}),
        (
            ("knockout", "", None, "5>1, 6>2", "1, 2", None, ""),
            {"kind": "knockout", "layers": [1, 2], "edges": [[5, 1], [6, 2]]},
        ),
        (("patch_residual", "", None, "", "", 3, "2, 4"), {"kind": "patch_residual", "layer": 3, "positions": [2, 4]}),
    ],
)
def test_each_kind_becomes_a_body_the_api_schema_accepts(fields, item):
    got, problems = intervention_item(*fields)
    assert problems == [] and got == item
    InterventionCreate.model_validate({"interventions": [got], "corrupted": "x"})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (("ablate", "", "zero", "", "", None, ""), "No heads yet"),
        (("ablate", "L1", "zero", "", "", None, ""), "not a head label"),
        (("knockout", "", None, "", "1", None, ""), "No edges yet"),
        (("knockout", "", None, "5>1", "", None, ""), "Name the layer"),
        (("patch_residual", "", None, "", "", None, "2"), "Name the layer after which"),
        (("patch_residual", "", None, "", "", 1, ""), "Name the positions"),
        (("swap", "", None, "", "", None, ""), "unknown intervention kind"),
    ],
)
def test_incomplete_fields_are_named_not_sent(fields, message):
    item, problems = intervention_item(*fields)
    assert item is None and any(message in p for p in problems)


def test_metric_fields_keep_the_answers_leading_space_and_need_both():
    fields, problems = metric_fields("answer_logit_diff", " Paris", " Rome", "The capital of Italy is", "denoising")
    assert problems == []
    assert fields == {
        "metric": "answer_logit_diff",
        "answers": [" Paris", " Rome"],
        "corrupted": "The capital of Italy is",
        "direction": "denoising",
    }
    ResidualPatchingCreate.model_validate(fields)
    assert metric_fields("answer_logit_diff", " Paris", "", None, None)[1]
    assert metric_fields(None, "", "", "  ", "noising") == ({}, [])


def test_the_maps_show_a_later_layer_unless_one_at_or_after_the_intervention_was_chosen():
    assert touched_layer({"kind": "ablate", "heads": [[4, 1], [2, 0]]}) == 2
    assert touched_layer({"kind": "knockout", "layers": [3, 1], "edges": [[1, 0]]}) == 1
    assert touched_layer({"kind": "patch_residual", "layer": 5, "positions": [0]}) == 5
    assert view_layer(None, 2, 6) == 3  # default: the next layer
    assert view_layer(1, 2, 6) == 3  # an earlier layer cannot change: moved on
    assert view_layer(2, 2, 6) == 2  # chosen (e.g. by a link): kept
    assert view_layer(5, 2, 6) == 5
    assert view_layer(None, 5, 6) == 5  # no layer follows the last one


def test_patching_figure_holds_the_cells_and_names_the_columns():
    effect = np.arange(6, dtype=float).reshape(2, 3) - 2.5
    fig = patching_figure(effect, ["[CLS]", "good", "[SEP]"], "prob", full=-0.75)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), effect)
    assert fig.data[0].zmid == 0 and fig.data[0].zmax == 2.5 and fig.data[0].zmin == -2.5
    assert list(fig.layout.xaxis.ticktext) == ["0 [CLS]", "1 good", "2 [SEP]"]
    assert "whole stream patched: Δ -0.7500" in fig.layout.title.text
