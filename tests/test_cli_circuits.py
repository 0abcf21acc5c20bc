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


def test_the_circuit_job_on_the_command_line(smollm2, tmp_path, capsys):
    """``--task induction``: the circuit job's shards and merge in this process (JSON as the API's result)."""
    out = tmp_path / "job.json"
    args = ["circuit", "--task", "induction", "--n", "2", "--half", "3", "--bos", "0", "--top", "5"]
    assert main([*args, "--curve", "0,5", "--threads", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "eap over 2 induction pairs of smollm2 (first token 0" in printed and "| 5 |" in printed
    report = json.loads(out.read_text())
    assert report["kind"] == "circuit" and report["n"] == 2 and len(report["rows"]) == 5
    assert report["per_example"]["tokens"] == [7, 7] and report["rows"][0]["n"] == 2
    assert main(["circuit", "--model", "smollm2"]) == 2
    assert "give --clean and --corrupted" in capsys.readouterr().err


def test_the_ioi_task_on_the_command_line(smollm2, tmp_path, capsys):
    """``--task ioi``: the drawn indirect-object pairs SmolLM2 solves, as the circuit job in this process."""
    out = tmp_path / "ioi.json"
    args = ["circuit", "--task", "ioi", "--n", "3", "--seed", "1", "--k", "10", "--curve", "0,10", "--top", "5"]
    assert main([*args, "--threads", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["task"] == "ioi" and report["generated"] == 3 and 1 <= report["n"] <= 3
    assert f"the {report['n']} of 3 items it solves" in printed
    assert all(label.startswith("ioi ") for label in report["per_example"]["label"])
    assert all(m > 0 for m in report["per_example"]["m_clean"])
