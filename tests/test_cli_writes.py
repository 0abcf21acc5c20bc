"""``attnscope lens``, ``attnscope attribute`` and ``attnscope graph`` as a user runs them, on SmolLM2: the
Markdown (the graph: JSON) on stdout and the JSON report, whose numbers are the pipeline's (parts
summing to the logit)."""

import json

import pytest

from attnscope.cli import main

pytestmark = pytest.mark.slow
TEXT = "The capital of France is"


def test_lens_and_attribute_print_markdown_and_write_json(smollm2, tmp_path, capsys):
    out = tmp_path / "lens.json"
    assert main(["lens", "--text", TEXT, "--target", " Paris", "--k", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| layer | top tokens |" in printed and "' Paris' is the lens's top token from layer" in printed
    lens = json.loads(out.read_text())
    assert len(lens["layers"]) == 31 and lens["layers"][-1]["target_rank"] == 0
    assert lens["layers"][lens["first_top_layer"]]["top"][0]["token"] == " Paris"
    out = tmp_path / "dla.json"
    assert main(["attribute", "--text", TEXT, "--contrast", " London", "--top", "3", "--out", str(out)]) == 0
    assert "residual error" in capsys.readouterr().out
    att = json.loads(out.read_text())
    total = att["embed"] + sum(map(sum, att["heads"])) + sum(att["attn_bias"]) + sum(att["mlp"]) + att["bias"]
    assert total == pytest.approx(att["logit"], abs=1e-4) and len(att["splits"]) == 3
    assert main(["attribute", "--text", TEXT, "--target", " Parisian capital"]) == 2
    assert "exactly one token" in capsys.readouterr().err


def test_graph_prints_the_routes_json_and_refuses_past_its_bounds(smollm2, tmp_path, capsys):
    """``attnscope graph``: the route's fields (``GraphPublic`` validates them), the top node the final
    stream at the last position, every kept edge at or above the threshold, each expanded node's
    incoming shares at most 1, the logit's direct parts summing to logit - bias; the route's bounds
    and the node bound refused with exit status 2 and the reason."""
    from attnscope.server.schemas import GraphPublic

    assert main(["graph", "--text", TEXT, "--threshold", "0.05", "--max-nodes", "800", "--target", " Paris"]) == 0
    g = json.loads(capsys.readouterr().out)
    GraphPublic.model_validate({**g, "run_id": "cli"})
    assert g["target"] == " Paris" and g["position"] == 4 and g["threshold"] == 0.05
    assert g["nodes"][0] == {"kind": "pre", "layer": 30, "position": 4, "token": g["nodes"][0]["token"]}
    assert len(g["nodes"]) > 3 and all(e["weight"] >= 0.05 for e in g["edges"])
    incoming: dict = {}
    for e in g["edges"]:
        incoming[e["target"]] = incoming.get(e["target"], 0.0) + e["weight"]
        if e["kind"] == "attention":
            assert len(e["heads"]) == 9 and 0 <= min(e["heads"]) and max(e["heads"]) <= 1
    assert 0 in incoming and all(w <= 1 + 1e-5 for w in incoming.values())
    assert g["embed"] + sum(g["attention"]) + sum(g["mlp"]) == pytest.approx(g["logit"] - g["bias"], abs=1e-4)
    out = tmp_path / "graph.json"
    assert main(["graph", "--text", TEXT, "--threshold", "0.05", "--max-nodes", "800", "--out", str(out)]) == 0
    assert f"{len(g['nodes'])} nodes" in capsys.readouterr().out
    assert json.loads(out.read_text())["edges"] == g["edges"]  # the graph does not depend on the target
    for argv, reason in (
        (["--threshold", "1.5"], "--threshold: Input should be less than or equal to 1"),
        (["--max-nodes", "10001"], "--max-nodes: Input should be less than or equal to 10000"),
        (["--threshold", "0", "--max-nodes", "20"], "passed 20 nodes"),
        (["--position", "5"], "out of range"),
    ):
        assert main(["graph", "--text", TEXT, *argv]) == 2
        assert reason in capsys.readouterr().err
