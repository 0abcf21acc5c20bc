"""The figures of what heads write, from API answers: the DLA bar holds the heads of largest |part|
(largest at the top, negative parts red) and the lens bar one bar per layer labelled by its top token;
the address keeps the head detail's map kind."""

from __future__ import annotations

import pytest

from attnscope.frontend.pages.explore_address import PARAMS
from attnscope.frontend.plot_config import NEGATIVE, POSITIVE
from attnscope.frontend.url_state import parse_query, query_string
from attnscope.frontend.writes_figures import dla_figure, lens_figure, top_heads
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
    assert list(bar.y) == ["L0H2", "L1H0", "L0H1"] and list(bar.x) == [0.3, 1.5, -2.0]
    assert (
        bar.marker.color[-1] == NEGATIVE
        and bar.marker.color[0] == POSITIVE
        and "' Paris'" in dla_figure(att).layout.title.text
    )


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


def test_the_address_keeps_the_map_kind():
    assert "map=value-weighted" in query_string({"map": "value-weighted"}, PARAMS)
    assert query_string({"map": "attention"}, PARAMS) == ""  # the default is left out
    values, problems = parse_query({"map": "values"}, PARAMS)
    assert values["map"] == "attention" and problems
