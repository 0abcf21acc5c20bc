"""The path-patching experiment's edges: the named induction paths parse on SmolLM2's graph shape, and
the control edges are seeded, distinct, and never leave from a previous-token head."""

from attnscope.experiments.circuits_paths import EDGES, PREVIOUS_TOKEN, control_edges
from attnscope.pipelines.circuits.graph import Graph


def test_the_edges_exist_and_the_controls_are_seeded_random_earlier_heads():
    g = Graph(30, 9, 3)  # SmolLM2: 30 layers, 9 query heads sharing 3 key/value heads
    controls = control_edges(6, 0)
    assert controls == control_edges(6, 0) and controls != control_edges(6, 1)
    assert len(set(controls)) == 6
    for sender, receiver, _ in EDGES + controls:
        g.edge(sender, receiver)  # raises for an unknown node or a non-edge
    for sender, receiver, _ in controls:
        layer, head = (int(x) for x in sender[1:].split(".h"))
        assert 1 <= layer <= 15 and (layer, head) not in PREVIOUS_TOKEN and receiver in ("a17.g1<k>", "a18.g2<k>")
