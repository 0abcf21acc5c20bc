"""The probe figure's chance line: at the majority-class accuracy, labelled with its value and meaning,
on a box of its own above the line's left end."""

import pytest

from attnscope.frontend.probe_figures import chance_label, probe_figure
from attnscope.server.schemas import ProbeResultPublic


def _result(chance=0.509) -> ProbeResultPublic:
    rows = [
        {"layer": i, "accuracy": a, "accuracy_std": 0.02, "chance": chance} for i, a in enumerate([0.55, 0.7, 0.81])
    ]
    return ProbeResultPublic(
        model="minilm", dataset="sst2", n=40, folds=4, size=32, classifier="logistic", chance=chance, rows=rows
    )


def test_the_chance_line_says_its_value_and_meaning():
    fig = probe_figure(_result())
    line = [s for s in fig.layout.shapes if s.type == "line"][0]
    assert line.y0 == line.y1 == pytest.approx(0.509)
    note = fig.layout.annotations[0]
    assert note.text == chance_label(0.509) == "chance 0.51: always answering the majority class"
    assert note.xanchor == "left" and note.yanchor == "bottom" and note.bgcolor  # above the line, left end, boxed
    assert list(fig.data[0].y) == [0.55, 0.7, 0.81] and "4-fold" in fig.layout.title.text
