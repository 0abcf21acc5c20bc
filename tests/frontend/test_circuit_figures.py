"""The Circuits page's pure parts: the graph figure (node places, edges by sign, width and input, the
slider's cut), the faithfulness curve, the address (presets, the request body) and the Explore link
(which Explore's own address parser reads back)."""

from urllib.parse import parse_qsl, urlsplit

import pytest

from attnscope.frontend.circuit_figures import (
    NEGATIVE,
    POSITIVE,
    WIDTHS,
    circuit_graph_figure,
    faithfulness_curve_figure,
    head_label,
)
from attnscope.frontend.pages.circuits_callbacks import PARAMS, PRESETS, circuit_body, explore_href, initial_state
from attnscope.frontend.pages.explore_address import PARAMS as EXPLORE_PARAMS
from attnscope.frontend.url_state import parse_query, query_string

EDGES = [
    {"sender": "a0.h1", "receiver": "a1.g1<k>", "score": 2.0},  # 4 query heads on 2 kv heads: g1 = h2, h3
    {"sender": "E", "receiver": "a0.h0<q>", "score": -1.0},
    {"sender": "m1", "receiver": "logits", "score": 0.1},
    {"sender": "a1.h3", "receiver": "m1", "score": 0.05},
]


def _lines(fig):
    return [t for t in fig.data if t.mode == "lines"]


def test_edges_end_where_their_receivers_are_and_carry_sign_width_and_input():
    fig = circuit_graph_figure(EDGES, n_layers=2, n_heads=4, n_kv=2)
    segments = {}
    for t in _lines(fig):
        xs, ys = list(t.x), list(t.y)
        for i in range(0, len(xs), 3):
            segments[(xs[i], ys[i], xs[i + 1], ys[i + 1])] = t.line
    # a0.h1 (x 1, row 0) -> the k input of kv head 1 of layer 1: between heads 2 and 3 (x 2.5), row -1
    k_edge = segments[(1.0, 0.0, 2.5, -1.0)]
    assert k_edge.color == POSITIVE and k_edge.dash == "dash" and k_edge.width == WIDTHS[-1]
    q_edge = segments[(1.5, 1.0, 0.0, 0.0)]  # E above the middle, into head 0's query
    assert q_edge.color == NEGATIVE and q_edge.dash == "solid" and q_edge.width == WIDTHS[2]
    assert (4.0, -1.5, 1.5, -2.0) in segments  # m1 (the MLP column, below layer 1's heads) -> logits
    assert (3.0, -1.0, 4.0, -1.5) in segments and segments[(3.0, -1.0, 4.0, -1.5)].width == WIDTHS[0]
    heads = next(t for t in fig.data if t.name == "heads")
    assert list(heads.customdata) == [f"L{la}H{h}" for la in range(2) for h in range(4)]
    dark = [c for c, lab in zip(heads.marker.color, heads.customdata, strict=True) if c == "#333"]
    assert len(dark) == 3  # a0.h1, a1.h3 send and a0.h0 receives; a k/v receiver lights no query head


def test_the_slider_cuts_the_drawn_edges_to_the_top_ones():
    fig = circuit_graph_figure(EDGES, n_layers=2, n_heads=4, n_kv=2, shown=2)
    n = sum(len(t.x) // 3 for t in _lines(fig))
    assert n == 2 and "top 2 edges" in fig.layout.title.text
    assert sum(len(t.x) // 3 for t in _lines(circuit_graph_figure(EDGES, 2, 4, 2, shown=0))) == 0
    with pytest.raises(ValueError, match="unknown receiver"):
        circuit_graph_figure([{"sender": "E", "receiver": "a0.h0<z>", "score": 1.0}], 2, 4, 2)


def test_head_labels_and_the_curve():
    assert head_label("a12.h3") == "L12H3" and head_label("m3") is None and head_label("E") is None
    fig = faithfulness_curve_figure([{"k": 0, "faithfulness": 0.0}, {"k": 50, "faithfulness": 0.8}], 2.0, -1.0, "loss")
    assert list(fig.data[0].x) == [0, 50] and list(fig.data[0].y) == [0.0, 0.8]
    assert "clean 2.000, corrupted -1.000" in fig.layout.title.text


def test_presets_fill_an_empty_address_and_the_address_round_trips():
    state, problems = parse_query({"task": "induction"}, PARAMS)
    state = initial_state(state)
    assert not problems and state["clean"] == PRESETS["induction"]["clean"] and state["metric"] == "loss"
    kept = initial_state(parse_query({"task": "capitals", "clean": "A b", "corrupted": "C d"}, PARAMS)[0])
    assert kept["clean"] == "A b" and kept["answer"] is None  # the user's texts win over the preset
    values = {**state, "k": 30, "shown": 7, "method": "eap-ig"}
    again, problems = parse_query(dict(parse_qsl(query_string(values, PARAMS)[1:])), PARAMS)
    assert not problems and {k: again[k] for k in values} == values
    bad, problems = parse_query({"k": "9999", "method": "magic"}, PARAMS)
    assert bad["k"] == 50 and len(problems) == 2


def test_the_request_body_and_the_explore_link():
    body = circuit_body("smollm2", "a", "b", "loss", " x", " y", "eap", 5, 20, 4)
    assert "answer" not in body and body["k"] == 20 and body["curve_points"] == 4
    body = circuit_body("smollm2", "a", "b", "answer_prob", " x", "", "eap", 5, 20, 4)
    assert body["answer"] == " x" and body["wrong"] is None  # the API says the wrong answer is missing
    href = explore_href("smollm2", "The capital of France is", "L12H3")
    url = urlsplit(href)
    assert url.path == "/"
    state, problems = parse_query(dict(parse_qsl(url.query)), EXPLORE_PARAMS)
    assert not problems and state["head"] == "L12H3" and state["layer"] == 12
    assert state["model"] == "smollm2" and state["text"] == "The capital of France is"
