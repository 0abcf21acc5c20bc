"""The figures of what heads write, from API answers: the DLA bar holds the heads of largest |part| as
their share of the heads' direct write (largest at the top, negative parts blue), the lens grid each
layer's top-k tokens beside the target's rank by layer, the node lens one bar per layer labelled by its
top token; the address keeps the map kind and the open lens's k and target."""

from __future__ import annotations

import pytest

from attnscope.frontend.pages.explore_address import PARAMS
from attnscope.frontend.pages.explore_lens import lens_address, lens_k, lens_target
from attnscope.frontend.plot_config import NEGATIVE, POSITIVE
from attnscope.frontend.url_state import parse_query, query_string
from attnscope.frontend.writes_figures import (
    dla_figure,
    head_shares,
    lens_figure,
    lens_grid_figure,
    shown_token,
    top_heads,
)
from attnscope.frontend.writes_layout import token_strip, token_window
from attnscope.server.schemas import AttributionPublic, LensCell, LensPublic, TokenProb


def attribution() -> AttributionPublic:
    heads = [[0.1, -2.0, 0.3], [1.5, 0.0, -0.2]]
    return AttributionPublic(
        run_id="r", position=3, target_id=7, target=" Paris", contrast_id=None, contrast=None, logit=0.0,
        embed=0.1, heads=heads, attn_bias=[0.0, 0.0], mlp=[0.2, 0.1], bias=0.0, scale=1.0, residual_error=0.0,
        tokens=["a", "b", "c", "d"], splits=[],
    )  # fmt: skip


def test_the_dla_bar_holds_the_largest_heads_largest_on_top():
    att = attribution()
    assert top_heads(att, 3) == [(0, 1, -2.0), (1, 0, 1.5), (0, 2, 0.3)]
    bar = dla_figure(att, top=3).data[0]
    total = 0.1 + 2.0 + 0.3 + 1.5 + 0.0 + 0.2  # every head's |part|
    assert list(bar.y) == ["L0H2", "L1H0", "L0H1"]
    assert list(bar.x) == pytest.approx([100 * 0.3 / total, 100 * 1.5 / total, -100 * 2.0 / total])
    assert [c[:2] for c in bar.customdata] == [[0, 2], [1, 0], [0, 1]] and bar.customdata[-1][2] == -2.0
    assert list(bar.marker.line.width) == [0, 0, 0]  # the selected head's outline: drawn by Explore in the browser
    assert (
        bar.marker.color[-1] == NEGATIVE
        and bar.marker.color[0] == POSITIVE
        and "' Paris'" in dla_figure(att).layout.title.text
    )
    assert "the 3 largest of 6 heads hold 93 %" in dla_figure(att, top=3).layout.title.text  # 3.8 / 4.1


def test_head_shares_magnitudes_sum_to_one():
    share = head_shares(attribution())
    assert abs(share).sum() == pytest.approx(1.0) and share[0, 1] == pytest.approx(-2.0 / 4.1)
    zero = attribution().model_copy(update={"heads": [[0.0, 0.0]]})
    assert not head_shares(zero).any()


def lens_cell(tokens: list[str], probs: list[float], rank: int, p: float) -> LensCell:
    top = [TokenProb(token_id=i, token=t, prob=q) for i, (t, q) in enumerate(zip(tokens, probs))]
    return LensCell(top=top, target_prob=p, target_rank=rank, entropy=1.0)


def test_the_lens_grid_shows_each_layers_top_k_and_the_targets_rank():
    lens = LensPublic(
        run_id="r", layers=3, positions=[4], tokens=["␣is"], target_id=9, target=" Paris",
        cells=[
            [lens_cell([".", ",", " the"], [0.2, 0.1, 0.05], 120, 0.0)],
            [lens_cell([" the", " Paris", " a"], [0.3, 0.2, 0.1], 1, 0.2)],
            [lens_cell([" Paris", " the", "\n"], [0.7, 0.1, 0.01], 0, 0.7)],
        ],
        first_top_layer=[2],
    )  # fmt: skip
    fig = lens_grid_figure(lens)
    grid, rank = fig.data
    assert [list(r) for r in grid.z] == [[0.2, 0.1, 0.05], [0.3, 0.2, 0.1], [0.7, 0.1, 0.01]]
    assert list(grid.x) == ["#1", "#2", "#3"] and list(grid.y) == [0, 1, 2]
    assert list(grid.customdata[2]) == [" Paris", " the", "\n"] and list(grid.text[2]) == ["␣Paris", "␣the", "↵"]
    assert list(rank.x) == [121, 2, 1] and list(rank.y) == [0, 1, 2]  # rank 1 = the top token
    assert fig.layout.xaxis2.type == "log"
    title = fig.layout.title.text
    assert "after position 4" in title and "top 3 tokens" in title and "target ' Paris'" in title
    assert "from layer 2 on" in title
    own = lens_grid_figure(lens.model_copy(update={"target": None, "target_id": None}))
    assert "the model's own next token ' Paris'" in own.layout.title.text


def test_shown_token_makes_spaces_visible():
    assert shown_token(" Paris") == "␣Paris" and shown_token("\n\t") == "↵⇥" and shown_token("") == "∅"


def test_the_token_strip_windows_a_long_text_around_the_position():
    assert token_window(10, 3) == (0, 10)
    assert token_window(1000, 500, 96) == (452, 548) and token_window(1000, None, 96) == (904, 1000)
    assert token_window(1000, 5, 96) == (0, 96)
    strip = token_strip([f"t{i}" for i in range(200)], 150, width=10)
    buttons = [c for c in strip if getattr(c, "id", None)]
    assert [b.id["pos"] for b in buttons] == list(range(145, 155))
    pressed = [b for b in buttons if b.className.endswith("selected")]
    assert len(pressed) == 1 and pressed[0].id["pos"] == 150
    assert strip[0].children == "… 145 tokens before" and strip[-1].children == "… 45 tokens after"


def test_lens_inputs_are_read_safely():
    assert lens_k("7") == 7 and lens_k(None) == 5 and lens_k(500) == 50 and lens_k("x") == 5
    assert lens_target(" Paris") == " Paris" and lens_target("  ") is None and lens_target(None) is None
    assert lens_address(False, 7, " Paris") == {"lens_k": None, "lens_target": None}
    assert lens_address(True, None, "") == {"lens_k": 5, "lens_target": None}


def test_the_lens_bar_has_a_bar_per_layer_labelled_by_its_top_token():
    def cell(tok: str, p: float, rank: int) -> LensCell:
        return LensCell(top=[TokenProb(token_id=1, token=tok, prob=p)], target_prob=p, target_rank=rank, entropy=1.0)

    lens = LensPublic(
        run_id="r", layers=3, positions=[3], tokens=["␣is"], target_id=None, target=None,
        cells=[[cell(".", 0.0, 90)], [cell(" the", 0.1, 2)], [cell(" Paris", 0.8, 0)]], first_top_layer=[2],
    )  # fmt: skip
    bar = lens_figure(lens).data[0]
    assert list(bar.text) == [".", " the", " Paris"] and list(bar.y) == pytest.approx([0.0, 0.1, 0.8])
    assert "from layer 2" in lens_figure(lens).layout.title.text


def test_the_address_keeps_the_map_kind_and_the_open_lens():
    assert "map=value-weighted" in query_string({"map": "value-weighted"}, PARAMS)
    assert query_string({"lens_k": 5, "lens_target": " Paris"}, PARAMS) == "?lens_k=5&lens_target=+Paris"
    values, problems = parse_query({"lens_k": "5", "lens_target": " Paris"}, PARAMS)
    assert values["lens_k"] == 5 and values["lens_target"] == " Paris" and not problems
    values, problems = parse_query({"lens_k": "500"}, PARAMS)
    assert values["lens_k"] is None and "at most 50" in problems[0]
    assert query_string({"map": "attention"}, PARAMS) == ""  # the default is left out
    values, problems = parse_query({"map": "values"}, PARAMS)
    assert values["map"] == "attention" and problems


def test_structure_keeps_the_map_kind_in_its_address():
    from attnscope.frontend.pages.structure_callbacks import PARAMS as STRUCTURE

    assert query_string({"map": "value-weighted"}, STRUCTURE) == "?map=value-weighted"
    assert query_string({"map": "attention"}, STRUCTURE) == ""
    values, problems = parse_query({"map": "norms"}, STRUCTURE)
    assert values["map"] == "attention" and "must be one of attention, value-weighted" in problems[0]
