"""``attnscope lens`` and ``attnscope attribute`` as a user runs them, on SmolLM2: the Markdown on
stdout and the JSON report, whose numbers are the pipeline's (parts summing to the logit)."""

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
