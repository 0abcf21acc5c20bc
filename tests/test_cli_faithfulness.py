"""``attnscope faithfulness`` writes the table (JSON + CSV) and every example's values (long-format CSV)."""

import csv
import json

import pytest

from attnscope.cli import main


def test_faithfulness_command_writes_the_table_and_the_examples(tmp_path):
    out = tmp_path / "faith"
    argv = ["faithfulness", "--model", "minilm-sst2", "--dataset", "sst2", "--n", "3", "--out", str(out)]
    assert main([*argv, "--explainers", "attention", "random", "--count", "eraser-order"]) == 0
    result = json.loads(out.with_suffix(".json").read_text())
    assert result["count"] == "eraser-order" and result["n"] == 3
    with (tmp_path / "faith-examples.csv").open() as f:
        rows = list(csv.DictReader(f))
    comp = [float(r["value"]) for r in rows if r["explainer"] == "attention" and r["metric"] == "comprehensiveness"]
    assert [r["example"] for r in rows[:3]] == ["0", "1", "2"] and len(comp) == 3
    row = next(r for r in result["rows"] if r["explainer"] == "attention")
    assert sum(comp) / 3 == pytest.approx(row["comprehensiveness"], abs=1e-4)
    assert result["intervals"]["attention"]["comprehensiveness"]["n"] == 3
