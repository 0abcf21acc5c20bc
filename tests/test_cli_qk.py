"""``attnscope qk-induction`` on a tiny random Llama (RoPE, grouped-query heads): the report names
earlier heads as key-side parts, K-composition sources and ablation checks, and its terms conserve."""

from __future__ import annotations

import json

import pytest

from attnscope.cli import main


def test_qk_induction_writes_a_report(tiny_causal_lms, tmp_path, capsys):
    root, _ = tiny_causal_lms
    out = tmp_path / "qk.json"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
        args = ["qk-induction", "--model", "local:llama", "--half", "6", "--seeds", "2", "--top", "2"]
        assert main([*args, "--positions", "3", "--device", "cpu", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == report
    assert report["model"] == "local:llama" and len(report["heads"]) == 2
    for row in report["heads"]:
        assert row["head"].startswith("L1H")  # layer 0 has nothing earlier to attribute to
        assert row["conservation_error_max"] < 1e-4
        assert all(p["part"].startswith("L0H") for p in row["top_key_heads"])
        assert all(p["head"].startswith("L0H") for p in row["k_composition_top"])
        assert set(row["ablation_score_change"]) <= {f"L0H{h}" for h in range(4)}
        assert 0 < report["k_composition_baseline"]["mean"] < 1
