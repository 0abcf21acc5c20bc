"""``attnscope circuit`` on SmolLM2: the circuit's Markdown and JSON (faithfulness, exact re-check),
one path-patched edge, and a refusal as exit status 2 with the reason on stderr."""

import json

import pytest

from attnscope.cli import main

pytestmark = pytest.mark.slow
PAIR = ["--clean", "The capital of France is", "--corrupted", "The capital of Italy is", "--answer", " Paris",
        "--wrong", " Rome"]  # fmt: skip


def test_circuit_edge_and_refusal(smollm2, tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["circuit", *PAIR, "--k", "30", "--check", "5", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "faithfulness curve" in printed and "exact re-check of the top 5 edges" in printed
    report = json.loads(out.read_text())
    assert len(report["edges"]) == 30 and report["n_edges"] == 70651 and len(report["check"]) == 5
    assert main(["circuit", *PAIR, "--sender", "m0", "--receiver", "a2.h0<v>"]) == 0
    assert "noising m0 -> a2.g0<v>: exact effect" in capsys.readouterr().out
    assert main(["circuit", *PAIR[:2], "--corrupted", "The capital of the United States is", *PAIR[4:]]) == 2
    assert "same number of tokens" in capsys.readouterr().err
