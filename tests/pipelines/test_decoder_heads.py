"""The decoder head census (``attnscope heads``) on a tiny random Llama: tables, counts, the probe's
loss per copy, the Markdown docs/results/llm.md shows; refused for encoders."""

import json

import numpy as np
import pytest
from scipy.stats import ttest_1samp

from attnscope.cli import main
from attnscope.models.loading import load_model
from attnscope.pipelines.decoder_heads import decoder_heads, markdown, threshold_tests


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
    # every seed's score is kept, and the table's score is their mean
    per_seed = np.asarray(report["per_seed"]["induction"])
    assert per_seed.shape == (2, 2, 4) and report["per_seed"]["seeds"] == [0, 1]
    for r in report["induction"]:
        assert per_seed[:, r["layer"], r["head_index"]].mean() == pytest.approx(r["score"], abs=1e-4)
    t = report["tests"]["induction"]
    assert t["tested"] <= 8 and t["holm"]["count"] <= t["bh"]["count"] and "stand out after Holm" in text


def test_threshold_tests_find_the_planted_head_and_agree_with_scipy():
    rng = np.random.default_rng(0)
    scores = 0.5 + 0.05 * rng.standard_normal((6, 3, 4))  # [seed, layer, head]: at the threshold
    scores[:, 2, 1] = 0.9 + 0.01 * rng.standard_normal(6)  # planted: far over it on every seed
    scores[:, 0, 0] = 0.55  # no spread over the seeds: no test
    t = threshold_tests(scores, threshold=0.5)
    assert t["holm"] == {"count": 1, "heads": ["L2H1"]} and t["bh"]["heads"][0] == "L2H1"
    assert t["tested"] == 11
    a = t["arrays"]
    for layer, head in [(2, 1), (1, 3), (0, 2)]:
        want = ttest_1samp(scores[:, layer, head], 0.5, alternative="greater").pvalue
        assert a["p"][layer, head] == pytest.approx(want, rel=1e-9)
        assert a["low"][layer, head] < scores[:, layer, head].mean() < a["high"][layer, head]
    assert np.isnan(a["p"][0, 0]) and np.isnan(a["p_holm"][0, 0])
    finite = np.isfinite(a["p"])
    assert np.nanmax(a["p_holm"][finite] / np.minimum(a["p"][finite] * 11, 1.0)) <= 1.0 + 1e-12  # Holm <= Bonferroni
    with pytest.raises(ValueError, match="at least 2 seeds"):
        threshold_tests(scores[:1])


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
