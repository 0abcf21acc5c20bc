"""Every explainer on the real fine-tuned classifier: finite, one score per token, deterministic;
IG completeness; the classifier itself (delta overlay, refusal of a mismatched delta)."""

import json
import shutil

import numpy as np
import pytest
import torch

from attnscope.models.delta import CHECKPOINTS, DeltaMismatchError, apply_delta, build_minilm_classifier
from attnscope.pipelines.explainers import (
    EXPLAINERS,
    NotAClassifierError,
    example_from_text,
    example_from_words,
    make_explainer,
    make_predict,
)

TEXT = "a gripping , funny and deeply moving film ."


@pytest.fixture(scope="module")
def clf():
    from attnscope.models.loading import load_model

    return load_model("minilm-sst2", device="cpu")


@pytest.fixture(scope="module")
def example(clf):
    return example_from_text(clf, TEXT)


def test_the_classifier_gets_sentiment_right_on_clear_cases(clf):
    probs = make_predict(clf)(
        [example_from_text(clf, t).input_ids for t in ("a wonderful , moving film .", "a dull , tedious mess .")]
    )
    assert probs.argmax(axis=1).tolist() == [1, 0]
    np.testing.assert_allclose(probs.sum(axis=1), 1, atol=1e-6)
    manifest = json.loads((CHECKPOINTS / "minilm-sst2" / "manifest.json").read_text())
    assert manifest["dev_accuracy"] >= 0.85 and clf.spec.extra["accuracy"] == manifest["dev_accuracy"]


def test_predict_batches_agree_with_single_calls(clf, example):
    predict = make_predict(clf, max_batch_tokens=16)  # forces several chunks
    seqs = [example.input_ids, example.input_ids[[0, 2, 3, -1]], example.input_ids[[0, -1]]]
    together = predict(seqs)
    alone = np.concatenate([make_predict(clf)([s]) for s in seqs])
    np.testing.assert_allclose(together, alone, atol=1e-5)


@pytest.mark.parametrize("name", sorted(EXPLAINERS))
def test_explainer_is_finite_one_per_token_and_deterministic(clf, example, name):
    a = make_explainer(name, clf).explain(example)
    b = make_explainer(name, clf).explain(example)
    assert a.shape == (len(example),) and np.all(np.isfinite(a))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert np.abs(a[[i for i in range(len(example)) if i not in example.special]]).max() > 0


def test_random_baseline_depends_on_the_seed(clf, example):
    a = make_explainer("random", clf, seed=1).explain(example)
    assert not np.allclose(a, make_explainer("random", clf, seed=2).explain(example))


def test_integrated_gradients_completeness(clf, example):
    """Attributions sum to p(x) - p(baseline) within captum's convergence delta."""
    ig = make_explainer("integrated_gradients", clf, n_steps=64)
    scores = ig.explain(example)
    predict = make_predict(clf)
    ref = example.input_ids.copy()
    ref[[i for i in range(len(ref)) if i not in example.special]] = clf.tokenizer.pad_token_id
    p = predict([example.input_ids, ref])
    target = int(p[0].argmax())
    gap = p[0, target] - p[1, target]
    assert abs(scores.sum() - gap) <= ig.last_delta + 1e-4
    assert ig.last_delta < 0.05 * abs(gap) + 1e-3


def test_raw_attention_options_and_errors(clf, example):
    last = make_explainer("attention", clf).explain(example)
    first = make_explainer("attention", clf, layer=0, heads=[2], row="mean").explain(example)
    assert not np.allclose(last, first)
    with pytest.raises(ValueError, match="out of range: this model has 6 layers"):
        make_explainer("attention", clf, layer=9).explain(example)
    with pytest.raises(ValueError, match="head=12 is out of range: this model has 12 heads"):
        make_explainer("attention", clf, heads=[12]).explain(example)


def test_long_inputs_are_truncated_and_rationale_loss_counted(clf):
    words = ["good"] * 600
    marks = [0] * 500 + [1] * 100
    ex = example_from_words(clf, words, marks)
    assert len(ex) == 512 and ex.truncated == 602 - 512
    assert ex.tokens[-1] == "[SEP]" and ex.human_lost == 90 and ex.meta["human_total"] == 100
    with pytest.raises(ValueError, match="limited to 64 tokens"):
        make_explainer("flow", clf).explain(example_from_words(clf, words[:100]))


def test_embedding_models_are_refused(minilm):
    with pytest.raises(NotAClassifierError, match="minilm-sst2"):
        make_explainer("rollout", minilm)


def test_a_mismatched_delta_is_refused(tmp_path):
    folder = tmp_path / "delta"
    shutil.copytree(CHECKPOINTS / "minilm-sst2", folder)
    model, _ = build_minilm_classifier(("negative", "positive"))
    with pytest.raises(DeltaMismatchError, match="base model"):
        apply_delta(model, folder, "some-other-base")
    manifest = json.loads((folder / "manifest.json").read_text())
    name = next(iter(manifest["tensors"]))
    manifest["tensors"][name] = [1, 2, 3]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DeltaMismatchError, match="shape"):
        apply_delta(model, folder, manifest["base_model"])
    small, _ = build_minilm_classifier(("a", "b", "c"))  # 3 classes: the head's shape differs
    with pytest.raises(DeltaMismatchError, match="expects"):
        apply_delta(small, CHECKPOINTS / "minilm-sst2", manifest["base_model"])
    assert torch.is_grad_enabled()
