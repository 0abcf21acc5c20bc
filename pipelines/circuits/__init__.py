"""Circuits: exact path patching of one edge, EAP / EAP-IG over the head-level graph, circuit
extraction and faithfulness (``docs/methods/circuits.md``). Built on ``Sites`` and the request session."""
