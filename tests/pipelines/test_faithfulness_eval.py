"""Data-set evaluation on the real classifier: movie reviews with human rationales, truncation
accounting, metric selection, and refusal of a data set whose labels the model does not predict."""

import numpy as np
import pytest

from attnscope.pipelines.datasets import load_sst2
from attnscope.pipelines.explainers import example_from_words
from attnscope.pipelines.faithfulness_eval import UnknownMetricError, explain_example
from attnscope.pipelines.faithfulness_shards import evaluate_dataset


@pytest.fixture(scope="module")
def clf():
    from attnscope.models.loading import load_model

    return load_model("minilm-sst2", device="cpu")


def test_movies_table_with_truncation_accounting(clf):
    seen = []
    out = evaluate_dataset(
        clf, "movies", ["rollout", "random"], n=2, max_tokens=64, progress=lambda d, t: seen.append((d, t))
    )
    assert seen == [(1, 2), (2, 2)]
    assert out["k"] == 0.07 and out["n"] == 2 and out["truncation"]["max_tokens"] == 64
    trunc = out["truncation"]
    assert trunc["examples_truncated"] == 2 and trunc["tokens_cut"] > 0
    assert 0 < trunc["human_tokens_lost"] <= trunc["human_tokens"]
    assert trunc["human_fraction_lost"] == pytest.approx(trunc["human_tokens_lost"] / trunc["human_tokens"], abs=1e-4)
    for row in out["rows"]:
        assert row["n"] == 2
        for m in (
            "comprehensiveness",
            "sufficiency",
            "aopc_comprehensiveness",
            "aopc_sufficiency",
            "token_f1",
            "iou_f1",
            "auprc",
        ):
            assert row[m] is not None and np.isfinite(row[m])
    assert set(out["curves"]) == {"rollout", "random"} and len(out["curves"]["rollout"]["comp_curve"]) == 5


def test_metric_selection_and_unknown_metrics(clf):
    ex = example_from_words(clf, "a fine , warm film".split(), [0, 1, 0, 1, 0])
    res = explain_example(clf, ex, ["random"], metrics=["token_f1"], k=0.4)
    assert res["faithfulness"] == {} and res["plausibility"]["random"].token.f1 >= 0
    with pytest.raises(UnknownMetricError, match="unknown metric"):
        explain_example(clf, ex, ["random"], metrics=["accuracy"])


def test_a_data_set_with_other_labels_is_refused(clf):
    with pytest.raises(ValueError, match="pick a model trained for this task"):
        evaluate_dataset(clf, "hatexplain", ["random"], n=1, allow_offensive=True)


def test_start_selects_a_window_and_rows_keep_iou_precision_recall(clf):
    total = len(load_sst2("dev"))  # 872 sentences (300 in the test fixtures' cut): the window stops at the end
    out = evaluate_dataset(clf, "sst2", ["random"], n=5, start=total - 2)
    assert out["start"] == total - 2 and out["n"] == 2
    assert "iou_precision" not in out["rows"][0]  # SST-2 has no human rationale
    movies = evaluate_dataset(clf, "movies", ["random"], n=1, start=3, max_tokens=32)
    row = movies["rows"][0]
    assert movies["start"] == 3 and {"iou_precision", "iou_recall"} <= set(row)
    with pytest.raises(ValueError, match="no examples"):
        evaluate_dataset(clf, "sst2", ["random"], n=1, start=total)
