"""The contribution graph's picture from a hand-made ``GraphPublic``: nodes at (position, level), every
edge drawn once between its two nodes with a width that grows with its importance, an attention
edge's hover naming its largest heads, a click mapped back to its node (and none for an edge), the
threshold control's value read safely, and when Explore keeps, clears or redraws the graph (``graph_step``:
it follows the position menu once drawn, survives the run data set again with the same run)."""

from __future__ import annotations

import pytest

from attnscope.frontend.graph_figures import clicked_node, edge_width, graph_figure, lens_layer, level
from attnscope.frontend.pages.explore_writes import graph_step, threshold_value
from attnscope.frontend.run_record import RunRecord
from attnscope.server.schemas import GraphEdge, GraphNode, GraphPublic


def graph() -> GraphPublic:
    nodes = [
        GraphNode(kind="pre", layer=2, position=2, token="␣is"),  # the final stream of a 2-block model
        GraphNode(kind="mid", layer=1, position=2, token="␣is"),
        GraphNode(kind="pre", layer=1, position=0, token="The"),
        GraphNode(kind="pre", layer=1, position=2, token="␣is"),
    ]
    edges = [
        GraphEdge(source=1, target=0, kind="residual", weight=0.7),
        GraphEdge(source=1, target=0, kind="mlp", weight=0.3),  # drawn on top of the residual: same nodes
        GraphEdge(source=2, target=1, kind="attention", weight=0.12, heads=[0.01, 0.1, 0.0, 0.05]),
        GraphEdge(source=3, target=1, kind="residual", weight=0.88),
    ]
    return GraphPublic(
        run_id="r", position=2, threshold=0.1, max_nodes=100, target_id=5, target=" Paris", nodes=nodes,
        edges=edges, logit=3.0, bias=0.1, embed=0.2, attention=[1.0, 0.5], mlp=[0.7, 0.5],
    )  # fmt: skip


def test_nodes_sit_at_their_position_and_level_and_click_back_to_themselves():
    fig = graph_figure(graph())
    nodes = fig.data[-1]
    assert list(nodes.x) == [2, 2, 0, 2] and list(nodes.y) == [4, 3, 2, 2]
    assert [level("pre", 2), level("mid", 1), level("pre", 1)] == [4, 3, 2]
    click = {"points": [{"customdata": list(nodes.customdata[2])}]}
    assert clicked_node(click) == ("pre", 1, 0)
    edge_click = {"points": [{"customdata": list(fig.data[-2].customdata[0])}]}
    assert clicked_node(edge_click) is None and clicked_node(None) is None and clicked_node({"points": []}) is None
    assert lens_layer("pre", 1) == 1 and lens_layer("mid", 1) == 1.5
    assert "' Paris'" in fig.layout.title.text and "4 nodes, 4 edges" in fig.layout.title.text
    assert list(fig.layout.xaxis.ticktext) == ["0:The", "2:␣is"]


def test_every_edge_is_drawn_once_wider_when_heavier():
    fig = graph_figure(graph())
    lines = [t for t in fig.data if t.mode == "lines"]
    segments = {}
    for t in lines:
        xs, ys = list(t.x), list(t.y)
        for k in range(0, len(xs), 3):
            assert xs[k + 2] is None and ys[k + 2] is None
            segments.setdefault(t.name, []).append(((xs[k], ys[k]), (xs[k + 1], ys[k + 1]), t.line.width))
    assert sum(len(v) for v in segments.values()) == 4
    assert segments["attention"] == [((0, 2), (2, 3), edge_width(0.12))]
    assert edge_width(0.88) > edge_width(0.3) > edge_width(0.12) > edge_width(0.05)
    res = sorted(w for *_, w in segments["residual"])
    assert res == [edge_width(0.7), edge_width(0.88)] and segments["mlp"][0][2] == edge_width(0.3)
    assert sum(t.showlegend for t in lines) == 3  # one legend entry per kind
    hover = list(fig.data[-2].text)  # the attention edges' only: a residual's middle would take a node's clicks
    assert len(hover) == 1 and list(fig.data[-2].x) == [1.0] and list(fig.data[-2].y) == [2.5]
    assert hover[0].startswith("attention x1[0] → m1[2]: 0.120") and "heads H1 0.100, H3 0.050, H0 0.010" in hover[0]


@pytest.mark.parametrize("raw, value", [("0.2", 0.2), (0.333, 0.33), (None, 0.04), ("x", 0.04), (9, 0.5), (0, 0.01)])
def test_the_threshold_control_is_read_safely(raw, value):
    assert threshold_value(raw) == value


def test_a_graph_over_hundreds_of_positions_labels_at_most_most_ticks_of_them():
    from attnscope.frontend.token_labels import MOST_TICKS

    g = graph()
    many = [GraphNode(kind="pre", layer=1, position=p, token=f"t{p}") for p in range(3, 603)]
    wide = g.model_copy(update={"nodes": g.nodes + many})
    axis = graph_figure(wide).layout.xaxis
    assert 0 < len(axis.tickvals) <= MOST_TICKS and axis.tickvals[0] == 0
    assert list(axis.ticktext) == [f"{p}:{'The' if p == 0 else '␣is' if p == 2 else f't{p}'}" for p in axis.tickvals]
    assert len(graph_figure(wide).data[-1].x) == 604  # every node still drawn


def _run(run_id: str = "r", causal: bool = True) -> RunRecord:
    return RunRecord(id=run_id, model="m", tokens=list("abcde"), shape=(2, 2, 5, 5), causal=causal)


RUN_DATA, POSITION, BUTTON, THRESHOLD = "explore-run-data", "prediction-position", "writes-button", "writes-threshold"


@pytest.mark.parametrize(
    "triggers, run, clicks, position, drawn, step",
    [
        (set(), _run(), 0, 4, None, "clear"),  # the page's first call
        ({BUTTON}, _run(), 1, 4, None, "draw"),
        ({THRESHOLD}, _run(), 1, 4, {"run": "r", "position": 4}, "draw"),
        ({THRESHOLD}, _run(), 0, 4, None, "clear"),  # the threshold before the button: nothing drawn
        ({POSITION}, _run(), 1, 3, {"run": "r", "position": 4}, "draw"),  # the menu moved: the graph follows
        ({POSITION}, _run(), 1, 4, {"run": "r", "position": 4}, "keep"),  # set to the drawn position
        ({POSITION}, _run(), 0, 3, None, "keep"),  # no graph drawn: the menu draws none
        ({POSITION}, _run("s"), 1, 3, {"run": "r", "position": 4}, "keep"),  # another run's: its run data clears it
        ({RUN_DATA}, _run(), 1, 4, {"run": "r", "position": 4}, "keep"),  # the same run set again (the address)
        ({RUN_DATA, POSITION}, _run(), 1, 2, {"run": "r", "position": 4}, "draw"),
        ({RUN_DATA}, _run("s"), 1, 4, {"run": "r", "position": 4}, "clear"),  # another run
        ({RUN_DATA}, None, 1, None, {"run": "r", "position": 4}, "clear"),
        ({BUTTON}, _run(causal=False), 1, 4, None, "clear"),
    ],
)
def test_the_graph_is_kept_cleared_or_drawn_again(triggers, run, clicks, position, drawn, step):
    assert graph_step(triggers, run, clicks, position, drawn) == step
