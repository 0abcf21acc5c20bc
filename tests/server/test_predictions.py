"""Typed model outputs (``Classification | Embedding | NextToken``) on real models, and their one
conversion into the API's ``Prediction``."""

import dataclasses

import pytest

from attnscope.models.capture import capture
from attnscope.models.interface import Classification, Embedding, NextToken
from attnscope.server.predictions import prediction_fields, prediction_of

TEXT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def text_ea():
    from attnscope.models.loading import load_model

    return load_model("text-ea", device="cpu")


def test_an_encoder_gives_a_frozen_embedding_and_its_prediction(minilm):
    out = capture(minilm, TEXT).output
    assert isinstance(out, Embedding) and out.dim == 384 == len(out.embedding)
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.dim = 3  # type: ignore[misc]
    assert dict(out) == {"kind": "embedding", "dim": 384, "embedding": out.embedding}
    pred = prediction_of(out)
    assert pred.kind == "embedding" and pred.embedding == out.embedding and pred.probs is None


def test_a_zoo_classifier_gives_a_classification(text_ea):
    out = capture(text_ea, TEXT).output
    assert isinstance(out, Classification) and out.predicted == out.labels[out.probs.index(max(out.probs))]
    assert prediction_of(out).probs == out.probs


def test_a_next_token_output_drops_its_generation_and_unset_fields():
    top = [[{"token_id": 5, "token": "x", "text": " x", "prob": 0.5}]]
    out = NextToken(" x", 5, "x", top, generation={"text": " x", "steps": []})
    assert "generation" in out and "loss" not in out
    fields = prediction_fields(out)
    assert fields == {"kind": "next-token", "predicted": " x", "predicted_id": 5, "predicted_token": "x", "top_k": top}
    assert prediction_of(out).top_k[0][0].text == " x"
