"""Structure's DLA beside the ablation effect, from a head-effects answer (no browser): the scatter
plots each head's DLA against its effect with the line of a purely direct effect for a logit
difference, the note names what was ranked with n and p, and the table gains a DLA column."""

import numpy as np
import pytest

from attnscope.frontend.dla_beside import agreement_text, dla_column, dla_effect_scatter

DLA = [[0.5, -0.2], [2.0, 0.0]]
EFFECT = [[-0.4, 0.3], [-1.8, 0.01]]


def test_the_scatter_puts_dla_against_the_effect_with_the_direct_line():
    agree = {"rho": -0.8, "p": 0.2, "n": 4}
    fig = dla_effect_scatter(DLA, EFFECT, "answer_logit_diff", "-effect", agree)
    pts = fig.data[0]
    assert list(pts.x) == [0.5, -0.2, 2.0, 0.0] and list(pts.y) == pytest.approx([-0.4, 0.3, -1.8, 0.01])
    assert list(pts.text) == ["L0H0", "L0H1", "L1H0", "L1H1"]
    line = fig.data[1]
    assert list(line.x) == [-2.0, 2.0] and list(line.y) == [2.0, -2.0] and line.name == "effect = −DLA"
    assert "ρ(DLA, −effect) = -0.80" in fig.layout.title.text
    loss = dla_effect_scatter(DLA, EFFECT, "loss", "effect", None)
    assert len(loss.data) == 1 and loss.layout.title.text == "DLA vs ablation effect"


def test_the_note_names_what_was_ranked_with_n_and_p():
    text = agreement_text({"rho": 0.2113, "p": 4.7e-4, "n": 270}, "-effect")
    assert text == "Spearman ρ of DLA and −effect +0.21 (n = 270 heads, two-sided p = 4.7e-04)"
    assert "none" in agreement_text({"rho": None, "p": None, "n": 4}, "effect")
    assert agreement_text(None, None) == ""


def test_the_table_gains_each_heads_dla():
    rows = [{"head": "L1H0", "type": "—", "effect": -1.8}, {"head": "L0H1", "type": "sink", "effect": 0.3}]
    out = dla_column(rows, np.asarray(DLA))
    assert [r["DLA"] for r in out] == [2.0, -0.2] and out[1]["type"] == "sink"
