import numpy as np
import pytest

from attnscope.experiments.faithfulness_tables import markdown, pooled


def _window(n, comp, prec, rec, acc, count="eraser-code"):
    return {
        "model": "m",
        "dataset": "movies",
        "convention": "eraser",
        "count": count,
        "k": 0.07,
        "removal": "delete",
        "n": n,
        "accuracy": acc,
        "truncation": {"examples_truncated": n, "tokens_cut": 10 * n, "human_tokens": 4 * n, "human_tokens_lost": n},
        "rows": [
            {"explainer": "attention", "n": n, "comprehensiveness": comp, "iou_precision": prec, "iou_recall": rec},
            {"explainer": "random", "n": n, "comprehensiveness": 0.0, "iou_precision": 0.0, "iou_recall": 0.0},
        ],
    }


def test_windows_pool_as_one_run_of_all_examples():
    head, rows = pooled([_window(20, 0.1, 0.2, 0.4, 0.8), _window(30, 0.2, 0.4, 0.1, 0.9)])
    assert head["n"] == 50 and head["accuracy"] == pytest.approx((20 * 0.8 + 30 * 0.9) / 50)
    assert head["truncation"] == {
        "examples_truncated": 50,
        "tokens_cut": 500,
        "human_tokens": 200,
        "human_tokens_lost": 50,
    }
    att = rows[0]
    assert att["comprehensiveness"] == pytest.approx((20 * 0.1 + 30 * 0.2) / 50)  # 0.16
    p, r = (20 * 0.2 + 30 * 0.4) / 50, (20 * 0.4 + 30 * 0.1) / 50  # 0.32, 0.22
    assert att["iou_f1"] == pytest.approx(2 * p * r / (p + r))  # F1 of the pooled means, not the mean of F1s
    assert rows[1]["iou_f1"] == 0.0
    table = markdown(head, rows)
    assert "| attention | 0.160 |" in table and "| random (baseline) |" in table and "n = 50" in table


def test_windows_of_different_runs_are_refused():
    with pytest.raises(ValueError, match="count"):
        pooled([_window(20, 0.1, 0.2, 0.4, 0.8), _window(20, 0.1, 0.2, 0.4, 0.8, count="ceil")])


def _with_examples(window, comp_attention, comp_random):
    window = {**window, "per_example": {"index": list(range(len(comp_attention)))}}
    window["per_example"]["values"] = {
        "attention": {"comprehensiveness": comp_attention},
        "random": {"comprehensiveness": comp_random},
    }
    return window


def test_intervals_pool_the_windows_examples_and_verdicts_follow_the_paired_interval():
    from attnscope.experiments.faithfulness_tables import interval_markdown, verdict

    rng = np.random.default_rng(2)
    r1, r2 = rng.uniform(0, 0.3, 20), rng.uniform(0, 0.3, 30)
    w1 = _with_examples(_window(20, 0.1, 0.2, 0.4, 0.8), list(r1 + 0.05), list(r1))  # attention = random + 0.05
    w2 = _with_examples(_window(30, 0.2, 0.4, 0.1, 0.9), list(r2 + 0.05), list(r2))
    text = interval_markdown([w1, w2])
    assert "over the 50 examples" in text
    assert "| attention | +0.050 [+0.050, +0.050] better |" in text  # every example: +0.05, paired
    assert interval_markdown([w1, _window(30, 0.2, 0.4, 0.1, 0.9)]) is None  # a window without examples
    assert verdict({"mean": 0.01, "low": -0.02, "high": 0.04, "n": 40}, "higher") == "no difference"
    assert verdict({"mean": 0.05, "low": 0.01, "high": 0.09, "n": 40}, "lower") == "worse"
    assert verdict({"mean": -0.05, "low": -0.09, "high": -0.01, "n": 40}, "lower") == "better"
    assert verdict(None, "higher") == "no interval"
