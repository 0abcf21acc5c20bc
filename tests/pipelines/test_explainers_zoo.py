"""The explainers and ERASER metrics on the zoo's text classifiers (word vocabulary, [CLS] + words,
64 positions), through the same calls as on Hugging Face models (``models/zoo/text_facade.py``)."""

import numpy as np
import pytest
import torch

from attnscope.models.capture import capture
from attnscope.models.loading import load_model
from attnscope.models.zoo.manifest import read_manifest
from attnscope.pipelines.explainers import (
    EXPLAINERS,
    NotAClassifierError,
    example_from_text,
    example_from_words,
    make_explainer,
    make_predict,
)
from attnscope.pipelines.explainers.base import char_spans_to_tokens, classifier_module
from attnscope.pipelines.faithfulness_eval import explain_example
from attnscope.pipelines.faithfulness_shards import evaluate_dataset

pytestmark = pytest.mark.skipif(read_manifest("text-ea") is None, reason="zoo not trained")
TEXT = "A gripping , funny and deeply moving film ."


@pytest.fixture(scope="module")
def text_ea():
    return load_model("text-ea", device="cpu")


@pytest.fixture(scope="module")
def example(text_ea):
    return example_from_text(text_ea, TEXT)


def test_encoding_matches_the_models_own_tokens(text_ea, example):
    cap = capture(text_ea, TEXT)
    assert example.tokens == tuple(cap.maps.tokens) and example.special == (0,)
    assert example.tokens[:3] == ("[CLS]", "a", "gripping")


def test_predict_equals_the_adapters_own_probabilities(text_ea, example):
    probs = make_predict(text_ea)([example.input_ids, example.input_ids[:4]])
    assert probs[0] == pytest.approx(capture(text_ea, TEXT).output["probs"], abs=1e-6)
    np.testing.assert_allclose(probs.sum(axis=1), 1, atol=1e-6)
    # a padded batch gives what a single call gives (padding is masked out of keys and pooling)
    alone = make_predict(text_ea)([example.input_ids[:4]])
    np.testing.assert_allclose(probs[1], alone[0], atol=1e-6)


def test_facade_attentions_are_the_captured_maps_and_carry_gradients(text_ea, example):
    model = classifier_module(text_ea)
    ids = torch.as_tensor(example.input_ids)[None]
    with torch.enable_grad():
        out = model(input_ids=ids, output_attentions=True)
        for a in out.attentions:
            a.retain_grad()
        torch.softmax(out.logits, -1)[0, 1].backward()
    maps = capture(text_ea, TEXT).maps.weights
    np.testing.assert_allclose(np.stack([a[0].detach().numpy() for a in out.attentions]), maps, atol=1e-5)
    assert all(a.grad is not None and a.grad.abs().sum() > 0 for a in out.attentions)


@pytest.mark.parametrize("name", sorted(EXPLAINERS))
def test_every_explainer_runs_on_a_zoo_classifier(text_ea, example, name):
    s = make_explainer(name, text_ea).explain(example)
    assert s.shape == (len(example),) and np.all(np.isfinite(s))
    assert np.abs(np.delete(s, list(example.special))).max() > 0


def test_integrated_gradients_completeness_on_a_zoo_classifier(text_ea, example):
    ig = make_explainer("integrated_gradients", text_ea, n_steps=64)
    scores = ig.explain(example)
    ref = example.input_ids.copy()
    ref[1:] = 0  # [PAD]
    p = make_predict(text_ea)([example.input_ids, ref])
    # the forward of attribution keeps every position as a key (mask of ones), like the baseline here
    with torch.no_grad():
        model = classifier_module(text_ea)
        ones = torch.ones(1, len(ref), dtype=torch.long)
        p_ref = torch.softmax(model(input_ids=torch.as_tensor(ref)[None], attention_mask=ones).logits, -1)[0]
    target = int(p[0].argmax())
    gap = p[0, target] - float(p_ref[target])
    assert abs(scores.sum() - gap) <= ig.last_delta + 1e-4


def test_human_spans_and_long_inputs(text_ea):
    marks = char_spans_to_tokens(text_ea, TEXT, [(2, 10)])  # "gripping"
    assert marks.tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    words = ["good"] * 100
    ex = example_from_words(text_ea, words, [0] * 60 + [1] * 40)
    assert len(ex) == 64 and ex.truncated == 101 - 64 and ex.human_lost == 40 - 3


def test_metrics_and_a_dataset_table_on_a_zoo_classifier(text_ea, example):
    res = explain_example(text_ea, example, ["attention", "random"], k=0.3)
    assert -1 <= res["faithfulness"]["attention"].comprehensiveness <= 1
    table = evaluate_dataset(text_ea, "sst2", ["attention", "random"], n=3, metrics=["comprehensiveness"])
    assert table["n"] == 3 and [r["explainer"] for r in table["rows"]] == ["attention", "random"]


def test_vision_classifiers_are_refused_with_what_to_use():
    with pytest.raises(NotAClassifierError, match="text classifiers"):
        make_explainer("rollout", load_model("vit", device="cpu"))
