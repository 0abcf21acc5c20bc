"""HateXplain, the optional second task: the committed classifier delta is the one its manifest
describes (test accuracy recomputed on the whole test split) and beats the majority class; its data
stay behind the opt-in. Posts are never printed by these tests."""

import json

import numpy as np
import pytest

from attnscope.models.data_registry import DATASETS
from attnscope.models.delta import CHECKPOINTS
from attnscope.models.loading import load_model
from attnscope.pipelines.datasets import HATEXPLAIN_LABELS, OffensiveContentError, load_hatexplain
from attnscope.pipelines.explainers import encode_words, make_predict

pytestmark = pytest.mark.skipif(
    not DATASETS["hatexplain"].complete(), reason="the whole HateXplain test split is not in the data folder: make data"
)


@pytest.fixture(scope="module")
def clf():
    return load_model("minilm-hatexplain", device="cpu")


def test_manifest_accuracy_is_what_the_committed_delta_scores_on_the_test_split(clf):
    manifest = json.loads((CHECKPOINTS / "minilm-hatexplain" / "manifest.json").read_text())
    assert manifest["labels"] == list(HATEXPLAIN_LABELS) == clf.labels
    assert manifest["data"].startswith("hatexplain validation") and manifest["evaluated_on"] == "HateXplain test"
    rows = load_hatexplain("test", allow_offensive=True)
    predict = make_predict(clf)
    probs = np.concatenate(
        [
            predict([encode_words(clf, r.words, max_tokens=128).input_ids for r in rows[i : i + 128]])
            for i in range(0, len(rows), 128)
        ]
    )
    acc = float((probs.argmax(1) == np.array([r.label for r in rows])).mean())
    assert acc == pytest.approx(manifest["test_accuracy"], abs=0.003)
    assert clf.spec.extra["accuracy"] == manifest["test_accuracy"]
    majority = np.bincount([r.label for r in rows]).max() / len(rows)
    assert acc > majority + 0.15 and manifest["majority_class_accuracy"] == pytest.approx(majority, abs=1e-4)


def test_the_data_need_the_opt_in():
    with pytest.raises(OffensiveContentError, match="opt-in"):
        load_hatexplain("test")
