"""The faithfulness table's uncertainty from shard records with planted values: per-example values kept in
order, each mean's bootstrap interval, the paired difference from random and the long-format rows."""

import numpy as np
import pytest

from attnscope.pipelines.faithfulness_uncertainty import example_rows, per_example_metrics, uncertainty


def _record(comp_a, comp_r, token_f1=None):
    faith = {"a": {"comprehensiveness": comp_a}, "random": {"comprehensiveness": comp_r}}
    plaus = {} if token_f1 is None else {"a": {"token": [0.5, 0.5, token_f1], "iou": [0.4, 0.6, 0.48], "auprc": 0.3}}
    return {"faith": faith, "plaus": plaus}


def test_a_constant_lead_over_random_is_a_zero_width_difference_on_noisy_examples():
    rng = np.random.default_rng(1)
    r = rng.uniform(0, 0.5, 30)  # examples differ a lot; "a" beats random by exactly 0.1 on each one
    records = [_record(float(x + 0.1), float(x)) for x in r]
    out = uncertainty(records, ["a", "random"], ["comprehensiveness"], start=40)
    assert out["per_example"]["index"] == list(range(40, 70))
    assert out["per_example"]["values"]["a"]["comprehensiveness"] == pytest.approx(list(r + 0.1), abs=1e-6)
    iv = out["intervals"]["a"]["comprehensiveness"]
    assert iv["n"] == 30 and iv["mean"] == pytest.approx(r.mean() + 0.1, abs=1e-4) and iv["high"] - iv["low"] > 0.05
    d = out["vs_random"]["a"]["comprehensiveness"]
    assert (d["mean"], d["low"], d["high"], d["n"]) == (pytest.approx(0.1), pytest.approx(0.1), pytest.approx(0.1), 30)
    assert set(out["vs_random"]) == {"a"} and out["interval"]["method"] == "BCa"


def test_missing_examples_and_plausibility_values():
    records = [_record(0.2, 0.1, 0.5), _record(None, 0.3, 0.7), _record(0.4, 0.2, None)]
    metrics = ["comprehensiveness", "token_f1", "iou_f1"]
    assert per_example_metrics(metrics) == ["comprehensiveness", "token_f1", "iou_precision", "iou_recall"]
    out = uncertainty(records, ["a", "random"], metrics, start=0)
    vals = out["per_example"]["values"]["a"]
    assert vals["comprehensiveness"] == [0.2, None, 0.4] and vals["token_f1"] == [0.5, 0.7, None]
    assert vals["iou_precision"] == [0.4, 0.4, None]
    assert out["intervals"]["a"]["comprehensiveness"]["n"] == 2
    assert "iou_f1" not in out["intervals"]["a"]  # F1 of mean P and mean R is no mean over examples
    assert out["intervals"]["random"]["token_f1"] is None  # never measured
    assert out["vs_random"]["a"]["comprehensiveness"]["mean"] == pytest.approx(0.15)  # examples 0 and 2 only
    rows = example_rows(out)
    assert {"example": 1, "explainer": "random", "metric": "comprehensiveness", "value": 0.3} in rows
    assert len(rows) == sum(
        v is not None for m in out["per_example"]["values"].values() for vs in m.values() for v in vs
    )


def test_without_random_there_is_no_paired_difference():
    out = uncertainty([_record(0.2, 0.1), _record(0.3, 0.1)], ["a"], ["comprehensiveness"], start=0)
    assert out["vs_random"] is None and out["intervals"]["a"]["comprehensiveness"]["n"] == 2
