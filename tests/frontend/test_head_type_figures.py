"""Head-type builders (the structure page's head-types panel), without a browser, on records shaped as
``GET /runs/{id}/heads`` returns them."""

import numpy as np

from attnscope.frontend.head_type_figures import (
    head_type_figure,
    label_of,
    labelled_heads,
    score_matrix,
    score_names,
)
from attnscope.frontend.pages.structure_heads import summary

KV = [0, 1, 0, 1]  # 4 query heads, 2 kv heads, interleaved


def _records(n_layers=2, n_heads=4):
    out = []
    for l in range(n_layers):
        for h in range(n_heads):
            sink = 0.9 if (l, h) in {(0, 1), (1, 3)} else 0.1
            induction = 0.7 if (l, h) == (1, 2) else 0.05
            previous = 0.8 if (l, h) == (0, 0) else 0.0
            labels = (["previous"] if previous > 0.5 else []) + (["sink"] if sink >= 0.5 else [])
            labels += ["induction"] if induction >= 0.4 else []
            out.append(
                {
                    "head": f"L{l}H{h}",
                    "labels": labels,
                    "previous": previous,
                    "self": 0.0,
                    "cls_sink": 0.0,
                    "sink": sink if not (l, h) == (1, 3) else 0.95,
                    "broad": 0.2,
                    "induction": induction,
                    "duplicate": 0.0,
                    "layer": l,
                    "head_index": h,
                    "distance": 1.5,
                    "kv_head": KV[h],
                }
            )
    return out


def test_score_names_put_sink_and_induction_first_and_skip_what_is_not_a_score():
    names = score_names(_records())
    assert names[:4] == ["sink", "induction", "previous", "duplicate"]
    assert set(names) == {"sink", "induction", "previous", "duplicate", "cls_sink", "self", "broad"}
    assert score_names([]) == [] and label_of("cls_sink") == "cls-sink"


def test_score_matrix_and_the_heads_that_carry_a_type_strongest_first():
    recs = _records()
    m = score_matrix(recs, "sink", 2, 4)
    assert m.shape == (2, 4) and m[0, 1] == 0.9 and m[1, 3] == 0.95 and m[1, 0] == 0.1
    assert np.isnan(score_matrix(recs[:1], "sink", 2, 4)[1, 1])  # a missing record stays NaN
    assert labelled_heads(recs, "sink") == [("L1H3", 0.95), ("L0H1", 0.9)]
    assert labelled_heads(recs, "sink", KV) == [("L1 H3 (kv 1)", 0.95), ("L0 H1 (kv 1)", 0.9)]
    assert labelled_heads(recs, "induction", KV) == [("L1 H2 (kv 0)", 0.7)]
    assert labelled_heads(recs, "duplicate") == []


def test_the_map_groups_heads_by_kv_head_and_names_every_label_on_hover():
    fig = head_type_figure(_records(), "sink", 2, 4, KV)
    heat = fig.data[0]
    assert list(fig.layout.xaxis.ticktext) == ["H0 (kv 0)", "H2 (kv 0)", "H1 (kv 1)", "H3 (kv 1)"]
    z = np.asarray(heat.z)
    assert z[1, 3] == 0.95 and z[0, 2] == 0.9  # columns in kv order: H3 is the 4th, H1 the 3rd
    assert heat.zmin == 0 and heat.zmax == 1
    assert heat.customdata[1][3] == "L1 H3 (kv 1): sink" and heat.customdata[0][0] == "L0 H0 (kv 0): previous"
    assert "sink" in fig.layout.title.text
    plain = head_type_figure(_records(), "induction", 2, 4)
    assert list(plain.layout.xaxis.ticktext) == ["H0", "H1", "H2", "H3"] and np.asarray(plain.data[0].z)[1, 2] == 0.7


def test_the_summary_lists_sink_and_induction_heads_with_their_scores():
    lines = summary(_records(), KV, "repeated random tokens: r1..r30 r1..r30 (causal LM), seed 0")
    items = lines[0].children
    text = [" ".join(str(c) if isinstance(c, str) else c.children for c in li.children) for li in items]
    assert text[0] == "sink: 2 heads  — L1 H3 (kv 1) 0.95, L0 H1 (kv 1) 0.90"
    assert text[1] == "induction: 1 head  — L1 H2 (kv 0) 0.70"
    assert text[2].startswith("previous: 1 head")
    assert "r1..r30" in lines[1].children
    none = summary([{**r, "labels": []} for r in _records()], None, None)
    assert none[0].children[0].children == "No head passes a type's threshold on this run." and len(none) == 1
