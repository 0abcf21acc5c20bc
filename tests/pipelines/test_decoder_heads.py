"""The decoder head census (``attnscope heads``) on a tiny random Llama: tables, counts, the probe's
loss per copy, the Markdown docs/results/llm.md shows; refused for encoders."""

import json

import pytest

from attnscope.cli import main
from attnscope.models.loading import load_model
from attnscope.pipelines.decoder_heads import decoder_heads, markdown


@pytest.fixture
def llama(tiny_causal_lms, monkeypatch):
    root, _ = tiny_causal_lms
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    return load_model("local:llama", device="cpu")


def test_report_tables_and_markdown(llama):
    report = decoder_heads(llama, half=10, seeds=(0, 1), top=3)
    for kind in ("sink", "previous", "duplicate", "induction"):
        rows = report[kind]
        assert len(rows) == 3 and [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
        assert all(r["head"] == f"L{r['layer']}H{r['head_index']}" for r in rows)
    assert all(r["min_over_seeds"] <= r["score"] + 1e-9 for r in report["induction"])
    assert report["counts"]["heads"] == 8 and report["probe_loss"]["first_copy"] > 0
    text = markdown(report)
    assert "| induction head | score | min over seeds |" in text and report["induction"][0]["head"] in text


def test_cli_prints_markdown_and_writes_json(llama, tmp_path, capsys):
    out = tmp_path / "heads.json"
    assert (
        main(["heads", "--model", "local:llama", "--half", "8", "--seeds", "1", "--top", "2", "--out", str(out)]) == 0
    )
    assert "| sink head | score |" in capsys.readouterr().out
    assert json.loads(out.read_text())["model"] == "local:llama"


def test_encoders_are_refused(minilm):
    with pytest.raises(ValueError, match="not a causal LM"):
        decoder_heads(minilm)
